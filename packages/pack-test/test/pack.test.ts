// The packages as a consumer gets them: `pnpm pack` (which builds them through prepack and rewrites workspace:
// versions to real ones), attw on each tarball, `npm install` of both tarballs into a scratch project outside the
// repo, then the installed copies used from plain Node ESM, plain Node CJS and tsc (strict; node16 and bundler).
import { execFile } from "node:child_process";
import { once } from "node:events";
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, "../../..");
const require = createRequire(import.meta.url);
const bin = (pkg: string, path: string) => join(dirname(require.resolve(`${pkg}/package.json`)), path);

let scratch: string;
let tarballs: Record<"types" | "client", string>;
let server: Server;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "toolplane-pack-"));
  const packs = join(scratch, "packs");
  await run(
    "pnpm",
    ["--filter", "@toolplane/types", "--filter", "@toolplane/client", "pack", "--pack-destination", packs],
    { cwd: repoRoot },
  );
  const find = (name: string) => join(packs, readdirSync(packs).find((f) => f.startsWith(`toolplane-${name}-`)) ?? "");
  tarballs = { types: find("types"), client: find("client") };

  const project = join(scratch, "project");
  cpSync(join(here, "../fixtures"), project, { recursive: true });
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // Both tarballs in one install: the client's dependency on @toolplane/types@<version> is met by the local one.
  await run("npm", ["install", "--no-audit", "--no-fund", "--no-package-lock", tarballs.types, tarballs.client], {
    cwd: project,
  });

  // What the installed client talks to: one known group, everything else the documented 404.
  server = createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    if (req.url === "/provider-groups/pgr_known") {
      res.end(JSON.stringify({ object: "provider.group", id: "pgr_known", name: "G" }));
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ __typename: "error", ok: false, status: 404, code: "not_found", message: "no" }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const closed = createServer().listen(0, "127.0.0.1");
  await once(closed, "listening");
  const closedPort = (closed.address() as AddressInfo).port;
  closed.close();
  env = {
    ...process.env,
    TOOLPLANE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    TOOLPLANE_CLOSED_URL: `http://127.0.0.1:${closedPort}`,
  };
});

afterAll(() => {
  server?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const project = () => join(scratch, "project");

describe("packed @toolplane/types and @toolplane/client", () => {
  it.each(["types", "client"] as const)("attw finds no problem in @toolplane/%s", async (name) => {
    // Exit code 1 on any problem, in any of node10, node16 (CJS and ESM) and bundler resolution.
    const { stdout } = await run(bin("@arethetypeswrong/cli", "dist/index.js"), [tarballs[name], "--format", "json"]);
    const result = JSON.parse(stdout) as { analysis: { problems: unknown[] } };
    expect(result.analysis.problems).toEqual([]);
  });

  it("ships built files only, and depends on no workspace or private package", async () => {
    const { stdout } = await run("tar", ["tzf", tarballs.client]);
    expect(stdout.split("\n").filter(Boolean).sort()).toEqual([
      "package/README.md",
      "package/dist/LICENSE",
      "package/dist/index.cjs",
      "package/dist/index.d.cts",
      "package/dist/index.d.ts",
      "package/dist/index.js",
      "package/package.json",
    ]);
    const manifest = require(join(project(), "node_modules/@toolplane/client/package.json")) as {
      private?: boolean;
      dependencies: Record<string, string>;
    };
    expect(manifest.private).toBeUndefined();
    expect(Object.values(manifest.dependencies).some((v) => v.startsWith("workspace:"))).toBe(false);
    const types = require(join(project(), "node_modules/@toolplane/types/package.json")) as { private?: boolean };
    expect(types.private).toBeUndefined();
  });

  it.each([
    ["esm", "esm.mjs", /dist\/index\.js$/],
    ["cjs", "cjs.cjs", /dist\/index\.cjs$/],
  ])("works from plain Node %s", async (format, script, entry) => {
    const { stdout } = await run(process.execPath, [script], { cwd: project(), env });
    const result = JSON.parse(stdout.trim()) as Record<string, string | false>;
    expect(result).toMatchObject({
      format,
      group: "pgr_known",
      apiError: "not_found",
      networkError: "ToolplaneNetworkError",
    });
    expect(result.entry).toMatch(entry);
  });

  it.each(["node16", "bundler"])("type-checks a strict consumer with moduleResolution %s", async (resolution) => {
    // consumer.ts holds @ts-expect-error lines (a paginate() call without its path id, a wrong body type): they
    // fail this check unless the installed declarations reject those calls.
    await run(process.execPath, [bin("typescript", "bin/tsc"), "-p", `tsconfig.${resolution}.json`], {
      cwd: project(),
    });
  });
});

// The server as a user runs it: `pnpm start` builds dist/main.mjs (scripts/build.mjs) and runs it with node, on an
// embedded data directory; and the keys CLI.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), "toolplane-e2e-"));
const env = { ...process.env, TOOLPLANE_DATA_DIR: dataDir, PORT: "0", LOG_LEVEL: "warn", DATABASE_URL: "" };
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
// Each process start opens PGlite: seconds of CPU, many times that on a busy 2-core machine. A generous bound, not a performance claim (pnpm bench measures restarts).
const PROCESS_TEST_TIMEOUT_MS = 300_000;

async function start(
  extraEnv: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, ["dist/main.mjs"], {
    cwd: root,
    env: { ...env, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearInterval(timer);
        resolve(match[1]);
      }
    }, 50);
    child.once("exit", (code) => {
      clearInterval(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return { child, url, output: () => output };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  return exited;
}

// The built CLI (what `pnpm build` ships); under tsx each run compiled the sources again (~4 s of CPU).
const cli = (...args: string[]) => promisify(execFile)(process.execPath, ["dist/cli.mjs", ...args], { cwd: root, env });
const keyIn = (text: string) => /(tp_[a-z0-9]{12}_[A-Za-z0-9_-]{43})/.exec(text)?.[1];
const status = async (url: string, key?: string) =>
  (await fetch(`${url}/provider-groups`, { headers: key ? { authorization: `Bearer ${key}` } : {} })).status;

// The PostgreSQL run covers the data layer; this file is about the embedded default, so it runs once.
describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("server process and keys CLI", () => {
  beforeAll(async () => {
    await promisify(execFile)(process.execPath, ["scripts/build.mjs"], { cwd: root });
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    "creates an instance and prints a key on first start, keeps data across restarts, stops on SIGTERM",
    async () => {
      const first = await start();
      const key = keyIn(first.output());
      expect(key).toBeDefined();
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect((await fetch(`${first.url}/health`)).status).toBe(200);
      expect((await fetch(`${first.url}/ready`)).status).toBe(200);
      const created = await fetch(`${first.url}/provider-groups`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Survives restarts" }),
      });
      expect(created.status).toBe(201);
      expect(await stop(first.child)).toBe(0);

      const second = await start();
      expect(keyIn(second.output())).toBeUndefined();
      const list = await fetch(`${second.url}/provider-groups`, { headers: { authorization: `Bearer ${key}` } });
      expect(((await list.json()) as { items: { name: string }[] }).items.map((g) => g.name)).toEqual([
        "Survives restarts",
      ]);
      expect(await stop(second.child)).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "creates, lists and revokes keys from the CLI",
    async () => {
      const created = await cli("keys", "create", "--name", "ci");
      const key = keyIn(created.stdout);
      expect(key).toBeDefined();
      const listed = await cli("keys", "list");
      expect(listed.stdout).toContain("ci");
      expect(listed.stdout).not.toContain(key?.slice("tp_".length + 13) ?? "<none>");

      const server = await start();
      expect(await status(server.url, key)).toBe(200);
      await stop(server.child);
      const prefix = key?.split("_")[1] ?? "";
      expect((await cli("keys", "revoke", prefix)).stdout).toContain("Revoked");
      const again = await start();
      expect(await status(again.url, key)).toBe(401);
      expect(await stop(again.child)).toBe(0);

      await expect(cli("keys", "frobnicate")).rejects.toMatchObject({ code: 2 });

      // --json for scripts, and revoke by the prefix exactly as `keys list` shows it (tp_<prefix>_…).
      const made = JSON.parse((await cli("keys", "create", "--name", "json", "--json")).stdout) as {
        id: string;
        prefix: string;
        key: string;
      };
      expect(made.key).toBe(keyIn(made.key));
      const all = JSON.parse((await cli("keys", "list", "--json")).stdout) as {
        id: string;
        revoked_at: string | null;
      }[];
      expect(all.find((k) => k.id === made.id)).toMatchObject({ revoked_at: null });
      const shown = (await cli("keys", "list")).stdout;
      const listedForm = `tp_${made.prefix}_…`;
      expect(shown).toContain(listedForm);
      const revoked = JSON.parse((await cli("keys", "revoke", listedForm, "--json")).stdout) as { id: string };
      expect(revoked.id).toBe(made.id);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "answers a tool call still running at SIGTERM as failed (shutdown) and leaves its record completed",
    async () => {
      const key = JSON.parse((await cli("keys", "create", "--name", "shutdown", "--json")).stdout).key as string;
      const server = await start({ TOOLPLANE_SHUTDOWN_TIMEOUT_MS: "500" });
      const api = (path: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method: body ? "POST" : "GET",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          ...(body ? { body: JSON.stringify(body) } : {}),
        }).then((res) => res.json() as Promise<Record<string, unknown>>);
      const providers = (await api("/providers?search=everything")).items as { id: string }[];
      const deployment = await api("/provider-deployments", { name: "Everything", provider_id: providers[0]?.id });
      const session = await api("/sessions", {
        providers: [{ provider_deployment: { type: "reference", provider_deployment_id: deployment.id } }],
      });
      // A 30-second call (server-everything over stdio), made statelessly like any one-shot client.
      // (connection_url names the public URL; this server listens on a port of its own choosing.)
      const answered = fetch(`${server.url}/mcp/${session.id}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${session.secret}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } },
        }),
      }).then((res) => res.text());
      const calls = () => api(`/sessions/${session.id}/tool-calls`).then((page) => page.items as { status: string }[]);
      await expect.poll(calls, { timeout: 60_000, interval: 200 }).toMatchObject([{ status: "waiting_for_response" }]);

      const exited = stop(server.child);
      expect(await answered).toMatch(/shut|stopp/i);
      expect(await exited).toBe(0);

      const again = await start();
      const recorded = await fetch(`${again.url}/sessions/${session.id}/tool-calls`, {
        headers: { authorization: `Bearer ${key}` },
      }).then((res) => res.json() as Promise<{ items: { status: string; error: { code: string } | null }[] }>);
      expect(recorded.items).toMatchObject([{ status: "failed", error: { code: "shutdown" } }]);
      expect(await stop(again.child)).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

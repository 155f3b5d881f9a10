import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { unwrap } from "@toolplane/client";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { importServers, scheduleImports } from "../../src/catalog/registry/import.ts";
import { onPath } from "../../src/runtimes/runner.ts";
import { connectMcp, createSession, deploymentRef, firstText } from "../mcp/gateway-fixtures.ts";
import { dumpAllTables } from "../support/catalog-fixtures.ts";
import { expectCreated } from "../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../support/fixture.ts";
import { startTestUpstream } from "../support/upstream-server.ts";

const FIXTURES = fileURLToPath(new URL("./registry-fixtures/", import.meta.url));
const fixtureDoc = (file: string) => JSON.parse(readFileSync(`${FIXTURES}${file}`, "utf8")) as Record<string, unknown>;

function writeTemp(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-registry-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const t = useTestServer();
const upstream = fixture(startTestUpstream, (u) => u.close());

/** A registry entry as `GET /v0.1/servers` answers it: the server.json plus the registry's own `_meta`. */
interface Published {
  server: Record<string, unknown>;
  status: "active" | "deprecated" | "deleted";
  updatedAt: string;
  isLatest: boolean;
}

/**
 * A small MCP registry on 127.0.0.1 with the read API's list operation as the published OpenAPI describes it:
 * `cursor` paging (two servers a page whatever `limit` asks), `updated_since`, `version=latest`, and
 * `{servers: [{server, _meta}], metadata: {nextCursor, count}}` answers. It records every query it got.
 */
async function startRegistry(entries: Published[]) {
  const queries: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://registry");
    if (url.pathname !== "/v0.1/servers") {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not found"}');
      return;
    }
    queries.push(url.searchParams);
    const since = url.searchParams.get("updated_since");
    const matching = entries.filter(
      (e) =>
        (url.searchParams.get("version") !== "latest" || e.isLatest) &&
        (!since || new Date(e.updatedAt) > new Date(since)) &&
        (since || e.status !== "deleted"),
    );
    const start = Number(Buffer.from(url.searchParams.get("cursor") ?? "MA", "base64url").toString());
    const page = matching.slice(start, start + 2);
    const next = start + 2 < matching.length ? Buffer.from(String(start + 2)).toString("base64url") : undefined;
    const body = {
      servers: page.map((e) => ({
        server: e.server,
        _meta: {
          "io.modelcontextprotocol.registry/official": {
            status: e.status,
            publishedAt: "2026-11-01T00:00:00Z",
            updatedAt: e.updatedAt,
            isLatest: e.isLatest,
          },
        },
      })),
      metadata: { count: page.length, ...(next ? { nextCursor: next } : {}) },
    };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    queries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const providerByName = (name: string) =>
  t.db
    .selectFrom("providers")
    .select(["id", "slug"])
    .where("instance_id", "is", null)
    .where((eb) => eb(eb.ref("metadata", "->>").key("registry_name" as never), "=", name))
    .executeTakeFirstOrThrow();

const getProvider = (id: string) =>
  unwrap(t.client.GET("/providers/{provider_id}", { params: { path: { provider_id: id } } }));

const deploymentAttempt = (providerId: string) =>
  t.client.POST("/provider-deployments", { body: { name: "Imported", provider_id: providerId } as never });

describe("MCP Registry import from files", () => {
  it("imports a directory of server.json files: remotes and every package type, skipping invalid documents", async () => {
    const summary = await importServers(t.db, FIXTURES);
    expect(summary).toMatchObject({ read: 6, providers_added: 5, versions_added: 5, unchanged: 0 });
    expect(summary.skipped).toEqual([
      expect.objectContaining({ name: "io.github.toolplane-tests/broken", reason: expect.stringContaining("version") }),
    ]);

    const weather = await getProvider((await providerByName("io.github.toolplane-tests/weather")).id);
    expect(weather).toMatchObject({
      type: "catalog",
      name: "Weather",
      slug: "io-github-toolplane-tests-weather",
      publisher: { slug: "io-github-toolplane-tests", name: "io.github.toolplane-tests" },
      metadata: { registry_name: "io.github.toolplane-tests/weather", homepage: "https://weather.example.com/docs" },
      current_version: { version: "1.0.0", status: "released" },
    });
    expect(weather.versions.map((v) => v.version)).toEqual(["1.0.0"]);
    // URL template variables and header inputs become the config schema; the secret is write-only.
    expect(weather.config_schema).toEqual({
      type: "object",
      properties: {
        port: { type: "string", description: "The port the tenant's endpoint listens on." },
        api_key: { type: "string", description: "Your Weather API key.", writeOnly: true },
        "X-Units": {
          type: "string",
          description: "Units of the forecasts.",
          enum: ["metric", "imperial"],
          default: "metric",
        },
      },
      required: ["port", "api_key"],
      additionalProperties: false,
    });
    const listed = await unwrap(t.client.GET("/providers", { params: { query: { search: "toolplane-tests" } } }));
    expect(listed.items.map((p) => p.slug).sort()).toEqual([
      "io-github-toolplane-tests-files",
      "io-github-toolplane-tests-notes",
      "io-github-toolplane-tests-sketch",
      "io-github-toolplane-tests-time",
      "io-github-toolplane-tests-weather",
    ]);
  });

  it("maps packages to runtimes: npx for npm with arguments and environment from the config", async () => {
    const notes = await providerByName("io.github.toolplane-tests/notes");
    const version = await t.db
      .selectFrom("provider_versions")
      .select(["runtime", "config_schema"])
      .where("provider_id", "=", notes.id)
      .executeTakeFirstOrThrow();
    expect(version.runtime).toEqual({
      type: "stdio",
      command: "npx",
      args: [
        "-y",
        "@toolplane-tests/notes-mcp@1.2.0",
        "{{config.notes_dir}}",
        "--format=markdown",
        "--max-notes={{config.max-notes}}",
      ],
      package: { registry_type: "npm", identifier: "@toolplane-tests/notes-mcp", version: "1.2.0" },
      transformer: { env: { NOTES_TOKEN: "{{config.NOTES_TOKEN}}", NOTES_LOG_LEVEL: "info" } },
    });
    expect(version.config_schema).toMatchObject({
      properties: {
        notes_dir: { type: "string" },
        "max-notes": { type: "number" },
        NOTES_TOKEN: { type: "string", writeOnly: true },
      },
      required: ["notes_dir"],
    });
    // npx is here: an npm import deploys.
    await expectCreated(deploymentAttempt(notes.id));
  });

  it("imports the same files again without changing anything", async () => {
    const before = await dumpAllTables(t.db);
    const again = await importServers(t.db, FIXTURES);
    expect(again).toMatchObject({ read: 6, providers_added: 0, versions_added: 0, versions_updated: 0, unchanged: 5 });
    const after = await dumpAllTables(t.db);
    for (const table of ["providers", "provider_versions", "publishers", "provider_listings", "servers"]) {
      expect(after[table], table).toBe(before[table]);
    }
  });

  it("adds a version when a file brings a new one, and makes it current", async () => {
    const doc = { ...fixtureDoc("weather-remote.json"), version: "1.1.0" };
    const summary = await importServers(t.db, `${FIXTURES}weather-remote.json`);
    expect(summary.unchanged).toBe(1);
    const added = await importServers(t.db, writeTemp({ "weather.json": JSON.stringify(doc) }));
    expect(added).toMatchObject({ read: 1, versions_added: 1, providers_added: 0 });
    const weather = await getProvider((await providerByName("io.github.toolplane-tests/weather")).id);
    expect(weather.versions.map((v) => v.version)).toEqual(["1.0.0", "1.1.0"]);
    expect(weather.current_version?.version).toBe("1.1.0");
  });

  it.skipIf(onPath("uvx"))(
    "imports a PyPI package that then fails at deployment: uvx is not installed here",
    async () => {
      const time = await providerByName("io.github.toolplane-tests/time");
      const res = await deploymentAttempt(time.id);
      expect(res.response.status).toBe(409);
      expect(res.error).toMatchObject({ code: "conflict" });
      expect((res.error as { message: string }).message).toBe(
        "Provider io-github-toolplane-tests-time version 0.6.2 cannot run on this server. The PyPI package mcp-server-time 0.6.2 runs with `uvx`, which is not installed on this server: install uv (https://docs.astral.sh/uv/) so that `uvx` is on the server's PATH, then deploy again.",
      );
    },
  );

  it("refuses to deploy an OCI image without a container engine, and an MCP bundle", async () => {
    const files = await deploymentAttempt((await providerByName("io.github.toolplane-tests/files")).id);
    expect(files.response.status).toBe(409);
    expect((files.error as { message: string }).message).toMatch(
      /OCI image package ghcr\.io\/toolplane-tests\/files-mcp:2\.0\.1 (runs in a container, and no container engine is configured: set DOCKER_HOST|runs with `docker`, which is not installed)/,
    );
    const sketch = await deploymentAttempt((await providerByName("io.github.toolplane-tests/sketch")).id);
    expect(sketch.response.status).toBe(409);
    expect((sketch.error as { message: string }).message).toContain(
      "is an MCP bundle (mcpb), which this server does not run",
    );
  });

  it("deploys an imported remote and uses it in a session: URL variables and headers come from the config", async () => {
    const weather = await providerByName("io.github.toolplane-tests/weather");
    const deployment = await expectCreated(deploymentAttempt(weather.id));
    const apiKey = `wk-${Date.now()}-secret`;
    const port = new URL(upstream.url).port;
    const config = await expectCreated(
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: deployment.id } },
        body: { name: "Tenant", config: { type: "inline", data: { port, api_key: apiKey } } } as never,
      }),
    );
    // The secret is write-only: the config does not answer it and nothing stores it in the clear.
    const read = await t.fetch(`/provider-deployments/${deployment.id}/configs/${(config as { id: string }).id}`);
    expect(read.status).toBe(200);
    expect(await read.text()).not.toContain(apiKey);
    expect(Object.values(await dumpAllTables(t.db)).join("\n")).not.toContain(apiKey);

    const session = await createSession(t.client, [
      {
        provider_deployment: deploymentRef(deployment.id),
        provider_config: { type: "reference", provider_config_id: (config as { id: string }).id },
      },
    ]);
    const client = await connectMcp(t, session);
    try {
      expect(firstText(await client.callTool({ name: "echo", arguments: { message: "hi" } }))).toBe("upstream: hi");
      expect(firstText(await client.callTool({ name: "whoami", arguments: {} }))).toBe(`Bearer ${apiKey}`);
    } finally {
      await client.close();
    }
  });

  it("answers a call of a remote whose URL variables the deployment's config does not set with what is missing", async () => {
    const weather = await providerByName("io.github.toolplane-tests/weather");
    const deployment = await expectCreated(deploymentAttempt(weather.id));
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
    const res = await t.client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id } },
      body: { tool_id: "echo", input: { message: "hi" } } as never,
    });
    expect(JSON.stringify(res.data ?? res.error)).toContain(
      `Provider ${weather.slug}: its URL needs the config value(s) port: give the deployment a config that sets them.`,
    );
  });
});

describe("MCP Registry import from a registry's read API", () => {
  const rename = (doc: Record<string, unknown>, version?: string) => ({
    ...doc,
    name: String(doc.name).replace("io.github.toolplane-tests/", "com.example.registry/"),
    ...(version ? { version } : {}),
  });
  const T1 = "2026-11-10T10:00:00.000Z";
  const T2 = "2026-11-12T10:00:00.000Z";
  const entries: Published[] = readdirSync(FIXTURES)
    .filter((f) => f !== "zz-invalid.json")
    .sort()
    .map((f) => ({ server: rename(fixtureDoc(f)), status: "active", updatedAt: T1, isLatest: true }));
  entries.push({
    server: rename(fixtureDoc("time-pypi.json"), "0.5.0"),
    status: "active",
    updatedAt: T1,
    isLatest: false,
  });
  const registry = fixture(
    () => startRegistry(entries),
    (r) => r.close(),
  );

  it("reads every page of the latest versions, then only what changed since the last run", async () => {
    const first = await importServers(t.db, registry.url);
    expect(first).toMatchObject({ read: 5, providers_added: 5, updated_since: null, next_updated_since: T1 });
    expect(registry.queries.map((q) => [q.get("version"), q.get("cursor") !== null, q.get("updated_since")])).toEqual([
      ["latest", false, null],
      ["latest", true, null],
      ["latest", true, null],
    ]);
    const time = await getProvider((await providerByName("com.example.registry/time")).id);
    expect(time.versions.map((v) => v.version)).toEqual(["0.6.2"]);

    registry.queries.length = 0;
    const nothingNew = await importServers(t.db, registry.url);
    expect(nothingNew).toMatchObject({ read: 0, updated_since: T1, next_updated_since: T1 });
    expect(registry.queries.map((q) => q.get("updated_since"))).toEqual([T1]);

    // A new version is published: the registry marks it latest and the old one not.
    const old = entries.find((e) => String(e.server.name).endsWith("/weather"));
    if (!old) throw new Error("no weather entry");
    Object.assign(old, { isLatest: false, updatedAt: T2 });
    entries.push({
      server: rename(fixtureDoc("weather-remote.json"), "2.0.0"),
      status: "active",
      updatedAt: T2,
      isLatest: true,
    });
    const incremental = await importServers(t.db, registry.url);
    expect(incremental).toMatchObject({ read: 1, versions_added: 1, updated_since: T1, next_updated_since: T2 });
    const weather = await getProvider((await providerByName("com.example.registry/weather")).id);
    expect(weather.versions.map((v) => v.version)).toEqual(["1.0.0", "2.0.0"]);
    expect(weather.current_version?.version).toBe("2.0.0");

    const state = await t.db.selectFrom("registry_imports").selectAll().executeTakeFirstOrThrow();
    expect(state).toMatchObject({ source: `${registry.url}/`, updated_since: new Date(T2) });
  });

  it("reads everything again with full and changes nothing", async () => {
    const before = await dumpAllTables(t.db);
    const full = await importServers(t.db, registry.url, { full: true });
    expect(full).toMatchObject({ read: 5, unchanged: 5, versions_added: 0, providers_added: 0, updated_since: null });
    const after = await dumpAllTables(t.db);
    expect(after.provider_versions).toBe(before.provider_versions);
    expect(after.providers).toBe(before.providers);
  });

  it("marks a version deleted in the registry deprecated, and fails clearly when the URL is not a registry", async () => {
    const weather = entries.find((e) => String(e.server.name).endsWith("/weather") && e.isLatest);
    if (!weather) throw new Error("no weather entry");
    Object.assign(weather, { status: "deleted", updatedAt: "2026-11-13T10:00:00.000Z" });
    const summary = await importServers(t.db, registry.url);
    expect(summary).toMatchObject({ read: 1, versions_updated: 1 });
    const provider = await getProvider((await providerByName("com.example.registry/weather")).id);
    expect(provider.versions.map((v) => [v.version, v.status])).toEqual([
      ["1.0.0", "released"],
      ["2.0.0", "deprecated"],
    ]);
    await expect(importServers(t.db, `${registry.url}/elsewhere`)).rejects.toThrow(/answered 404/);
  });

  it("runs as a scheduled job (TOOLPLANE_REGISTRY_URL) that logs each run's summary", async () => {
    const lines: Record<string, unknown>[] = [];
    let job: { stop(): Promise<void> } | undefined;
    await new Promise<void>((resolve) => {
      const write = (line: string) => {
        lines.push(JSON.parse(line));
        resolve();
      };
      job = scheduleImports(t.db, registry.url, 3_600_000, pino({ level: "info" }, { write }));
    });
    await job?.stop();
    expect(lines[0]).toMatchObject({ msg: "registry import", source: registry.url, read: 0, skipped: 0 });
  });
});

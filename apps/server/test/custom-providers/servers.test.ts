import { unwrap } from "@toolplane/client";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { customServerSource } from "../../src/custom-providers/server.ts";
import { listMigrations, splitStatements } from "../../src/db/migrate.ts";
import { createRemote, firstVersion, useRemoteProviderSetup, waitForDeployment } from "./support.ts";

// A deploy job runner and a real MCP upstream, so that a version reaches production.
const { t, upstream } = useRemoteProviderSetup();

/** The server of a custom provider's catalog provider, as the instance reads it through the list. */
async function serverOf(client: typeof t.client, providerId: string) {
  const row = await t.db.selectFrom("servers").select("id").where("provider_id", "=", providerId).executeTakeFirst();
  if (!row) return undefined;
  const page = await unwrap(client.GET("/servers", { params: { query: { limit: 100 } } }));
  return page.items.find((s) => s.id === row.id);
}

describe("custom providers in GET /servers", () => {
  it("lists a custom provider's server: no variant until production, then its remote; renamed and archived with it", async () => {
    const custom = await createRemote(t, upstream.url, "Station", { description: "Weather station" });
    const queued = await serverOf(t.client, custom.provider.id);
    expect(queued).toMatchObject({
      object: "server",
      type: "public",
      status: "active",
      name: "Station",
      description: "Weather station",
      imported_server_id: null,
      variants: [],
      metadata: {},
    });

    const v1 = await firstVersion(t, custom.id);
    await waitForDeployment(t, custom.id, v1.id);
    const deployed = await serverOf(t.client, custom.provider.id);
    const source = { type: "remote", remote: { url: upstream.url, protocol: "streamable_http" } };
    expect(deployed?.variants).toEqual([
      {
        object: "server.server_variant",
        status: "active",
        server: { object: "server", id: deployed?.id, type: "public" },
        source,
        current_version: {
          object: "server.server_version",
          oauth: { status: "not_required" },
          source,
          schema: { type: "object", properties: {}, additionalProperties: false },
          server: { object: "server", id: deployed?.id, type: "public" },
          created_at: expect.any(String),
        },
      },
    ]);
    expect(deployed?.id).toBe(queued?.id);

    await unwrap(
      t.client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: { custom_provider_id: custom.id } },
        body: { name: "Renamed station", description: null, status: "archived" },
      }),
    );
    const archived = await unwrap(
      t.client.GET("/servers/{server_id}", { params: { path: { server_id: deployed?.id ?? "" } } }),
    );
    expect(archived).toMatchObject({ name: "Renamed station", description: null, status: "archived" });
    expect(archived.variants.map((v) => v.status)).toEqual(["archived"]);
  });

  it("never shows another instance's custom provider server", async () => {
    const owner = await t.createTenant("owner");
    const theirs = await createRemote({ ...t, client: owner.client }, upstream.url, "Their station");
    const theirServer = await serverOf(owner.client, theirs.provider.id);
    expect(theirServer?.name).toBe("Their station");
    expect(await serverOf(t.client, theirs.provider.id)).toBeUndefined();
    const get = await t.client.GET("/servers/{server_id}", { params: { path: { server_id: theirServer?.id ?? "" } } });
    expect(get.response.status).toBe(404);
  });

  it("shows what the version declared, never this server's paths or the container engine's address", () => {
    expect(
      customServerSource({
        type: "function",
        runtime: "node20",
        entrypoint: "main.mjs",
        files: [],
        timeout_ms: 1000,
        memory_mb: 64,
      }),
    ).toEqual({ type: "stdio", stdio: { command: "node", args: ["main.mjs"] } });
    expect(customServerSource({ type: "container", image_ref: "ghcr.io/acme/mcp:1", username: "bot" })).toEqual({
      type: "container",
      container: { image_ref: "ghcr.io/acme/mcp:1" },
    });
  });

  it("backfills the servers of custom providers made before the migration, as the live sync builds them", async () => {
    const custom = await createRemote(t, upstream.url, "Backfilled");
    await waitForDeployment(t, custom.id, (await firstVersion(t, custom.id)).id);
    const live = await t.db
      .selectFrom("servers")
      .selectAll()
      .where("provider_id", "=", custom.provider.id)
      .executeTakeFirstOrThrow();
    await t.db.deleteFrom("servers").where("provider_id", "=", custom.provider.id).execute();

    const migration = listMigrations().find((m) => m.version === "0011_custom_provider_servers");
    if (!migration) throw new Error("the backfill migration is missing");
    for (const statement of splitStatements(migration.sql)) await sql.raw(statement).execute(t.db);

    const backfilled = await t.db
      .selectFrom("servers")
      .selectAll()
      .where("provider_id", "=", custom.provider.id)
      .executeTakeFirstOrThrow();
    expect(backfilled.id).toBe(`srv_${custom.id.slice(4)}`);
    const { id: _a, updated_at: _b, created_at: _c, ...rest } = backfilled;
    const { id: _d, updated_at: _e, created_at: _f, ...expected } = live;
    expect(rest).toEqual(expected);
    // Servers already there are left alone.
    const before = await t.db.selectFrom("servers").selectAll().orderBy("id").execute();
    for (const statement of splitStatements(migration.sql)) await sql.raw(statement).execute(t.db);
    expect(await t.db.selectFrom("servers").selectAll().orderBy("id").execute()).toEqual(before);
  });
});

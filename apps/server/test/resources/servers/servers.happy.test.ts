import { unwrap } from "@toolplane/client";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/lib/ids.ts";
import { useTestServer } from "../../support/fixture.ts";
import { seedServer } from "../../support/seed.ts";

const t = useTestServer();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("servers: happy paths", () => {
  it("returns a catalog server with its variants and current version shaped per the spec", async () => {
    const id = await seedServer(t.db, "Everything");
    const stored = await t.db.selectFrom("servers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    const storedVariants = stored.variants as unknown as { current_version: { created_at: string } }[];
    const versionCreatedAt = storedVariants[0]?.current_version.created_at;

    const res = await t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } });
    expect(res.response.status).toBe(200);
    const preview = { object: "server", id, type: "public" };
    const source = { type: "stdio", stdio: { command: "node", args: ["server.js", "stdio"] } };
    expect(res.data).toEqual({
      object: "server",
      id,
      type: "public",
      status: "active",
      name: "Everything",
      description: "Everything server",
      imported_server_id: null,
      variants: [
        {
          object: "server.server_variant",
          status: "active",
          server: preview,
          source,
          current_version: {
            object: "server.server_version",
            oauth: { status: "not_required" },
            source,
            schema: { type: "object", properties: {}, additionalProperties: false },
            server: preview,
            created_at: versionCreatedAt,
          },
        },
      ],
      metadata: { origin: "test" },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(res.data?.created_at).toBe(stored.created_at.toISOString());
    expect(res.data?.variants[0]?.source).toEqual(res.data?.variants[0]?.current_version.source);
    // Internal columns never leak.
    expect(Object.keys(res.data ?? {})).not.toContain("instance_id");
    expect(Object.keys(res.data ?? {})).not.toContain("provider_id");
  });

  it("shows every variant in order, remote and stdio, archived and OAuth-requiring ones included", async () => {
    const id = newId("srv");
    const importedFrom = await seedServer(t.db, "Original");
    const remote = { type: "remote" as const, remote: { url: "https://mcp.example.org/mcp", protocol: "sse" } };
    const stdio = { type: "stdio" as const, stdio: { command: "npx", args: [] } };
    const schema = {
      type: "object",
      properties: { token: { type: "string" } },
      required: ["token"],
      additionalProperties: false,
    };
    await t.db
      .insertInto("servers")
      .values({
        id,
        instance_id: null,
        name: "Multi",
        description: null,
        status: "archived",
        imported_server_id: importedFrom,
        metadata: JSON.stringify({}),
        variants: JSON.stringify([
          {
            status: "active",
            source: remote,
            current_version: {
              oauth_status: "required",
              source: remote,
              schema,
              created_at: "2026-01-02T03:04:05.678Z",
            },
          },
          {
            status: "archived",
            source: stdio,
            current_version: {
              oauth_status: "not_required",
              source: stdio,
              schema: {},
              created_at: "2026-01-01T00:00:00Z",
            },
          },
        ]),
      })
      .execute();

    const server = await unwrap(t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } }));
    expect(server).toMatchObject({
      status: "archived",
      description: null,
      imported_server_id: importedFrom,
      metadata: {},
    });
    expect(server.variants).toHaveLength(2);
    const [first, second] = server.variants;
    expect(first).toEqual({
      object: "server.server_variant",
      status: "active",
      server: { object: "server", id, type: "public" },
      source: remote,
      current_version: {
        object: "server.server_version",
        oauth: { status: "required" },
        source: remote,
        schema,
        server: { object: "server", id, type: "public" },
        created_at: "2026-01-02T03:04:05.678Z",
      },
    });
    expect(second).toMatchObject({
      status: "archived",
      source: stdio,
      current_version: { oauth: { status: "not_required" }, source: stdio, created_at: "2026-01-01T00:00:00.000Z" },
    });
  });

  it("returns a server stored with only the column defaults: no variants, empty metadata", async () => {
    const id = newId("srv");
    await sql`insert into servers (id, name) values (${id}, 'Bare')`.execute(t.db);
    const server = await unwrap(t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } }));
    expect(server).toMatchObject({ id, name: "Bare", description: null, variants: [], metadata: {} });
  });

  it("shows an instance's own server to that instance", async () => {
    const id = await seedServer(t.db, "Custom", t.tenant.instanceId);
    const server = await unwrap(t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } }));
    expect(server).toMatchObject({ object: "server", id, name: "Custom", type: "public" });
  });

  it("answers reads with JSON", async () => {
    const id = await seedServer(t.db, "Json");
    const res = await t.fetch(`/servers/${id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  });
});

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

  it("lists the catalog's servers and the instance's own, each as GET returns it", async () => {
    const catalog = await seedServer(t.db, "Listed catalog server");
    const own = await seedServer(t.db, "Listed own server", t.tenant.instanceId);
    const page = await unwrap(t.client.GET("/servers", { params: { query: { limit: 100 } } }));
    const ids = page.items.map((s) => s.id);
    expect(ids).toEqual(expect.arrayContaining([catalog, own]));
    expect(ids).toEqual([...ids].sort());
    // The built-in catalog's servers are there too.
    expect(page.items.map((s) => s.name)).toEqual(expect.arrayContaining(["Everything", "GitHub"]));
    for (const id of [catalog, own]) {
      const got = await unwrap(t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } }));
      expect(page.items.find((s) => s.id === id)).toEqual(got);
    }
  });

  it("pages through servers with limit, cursors, after, before and order", async () => {
    const tail: string[] = [];
    for (let i = 0; i < 4; i++) tail.push(await seedServer(t.db, `Paged ${i}`));
    const list = (query: Record<string, unknown>) => unwrap(t.client.GET("/servers", { params: { query } }));
    const all = (await list({ limit: 100 })).items.map((s) => s.id);
    expect(all.slice(-4)).toEqual(tail);
    const first = await list({ after: all.at(-5), limit: 2 });
    expect(first.items.map((s) => s.id)).toEqual(tail.slice(0, 2));
    const next = await list({ cursor: first.pagination.next_cursor, limit: 2 });
    expect(next.items.map((s) => s.id)).toEqual(tail.slice(2));
    expect(next.pagination).toMatchObject({ has_more_before: true, has_more_after: false, next_cursor: null });
    expect((await list({ cursor: next.pagination.previous_cursor, limit: 2 })).items.map((s) => s.id)).toEqual(
      tail.slice(0, 2),
    );
    expect((await list({ before: tail[1], limit: 1 })).items.map((s) => s.id)).toEqual([tail[0]]);
    expect((await list({ order: "desc", limit: 2 })).items.map((s) => s.id)).toEqual([tail[3], tail[2]]);
    const iterated: string[] = [];
    for await (const s of t.client.paginate("/servers", { params: { query: { limit: 3 } } })) iterated.push(s.id);
    expect(iterated).toEqual(all);
  });

  it("answers reads with JSON", async () => {
    const id = await seedServer(t.db, "Json");
    const res = await t.fetch(`/servers/${id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  });
});

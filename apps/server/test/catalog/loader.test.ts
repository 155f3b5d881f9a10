import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_CATALOG_DIR, loadCatalog, readCatalog, syncCatalog } from "../../src/catalog/loader.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

const everything = () =>
  t.db
    .selectFrom("providers")
    .select(["id", "current_version_id"])
    .where("slug", "=", "everything")
    .where("instance_id", "is", null)
    .executeTakeFirstOrThrow();

function catalogDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-catalog-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

describe("catalog loader", () => {
  it("loads the built-in catalog: providers, versions, auth methods, listings and servers", async () => {
    const provider = await everything();
    expect(provider.current_version_id).toMatch(/^prv_/);
    const version = await t.db
      .selectFrom("provider_versions")
      .selectAll()
      .where("id", "=", provider.current_version_id ?? "")
      .executeTakeFirstOrThrow();
    expect(version.runtime).toMatchObject({ type: "stdio", command: "node" });
    expect(version.tools.map((tool) => tool.name)).toContain("echo");

    const github = await t.db
      .selectFrom("providers")
      .select("id")
      .where("slug", "=", "github")
      .executeTakeFirstOrThrow();
    const methods = await t.db
      .selectFrom("provider_auth_methods")
      .selectAll()
      .where("provider_id", "=", github.id)
      .orderBy("key")
      .execute();
    expect(methods.map((m) => [m.key, m.type])).toEqual([
      ["oauth", "oauth"],
      ["token", "token"],
    ]);
    expect(methods[0]?.oauth?.token_endpoint).toBe("https://github.com/login/oauth/access_token");
    expect(methods[0]?.scopes.map((s) => s.scope)).toEqual(["repo", "read:org"]);
  });

  it("serves catalog servers and listings through the API", async () => {
    const provider = await everything();
    const server = await t.db
      .selectFrom("servers")
      .select("id")
      .where("provider_id", "=", provider.id)
      .executeTakeFirstOrThrow();
    const got = await unwrap(t.client.GET("/servers/{server_id}", { params: { path: { server_id: server.id } } }));
    expect(got).toMatchObject({ name: "Everything", type: "public", status: "active" });
    expect(got.variants[0]?.current_version.source).toMatchObject({ type: "stdio" });

    const listing = await t.db
      .selectFrom("provider_listings")
      .select("id")
      .where("provider_id", "=", provider.id)
      .executeTakeFirstOrThrow();
    const group = await unwrap(t.client.POST("/provider-groups", { body: { name: "Built-ins" } }));
    const withListing = await unwrap(
      t.client.POST("/provider-groups/{provider_group_id}/listings", {
        params: { path: { provider_group_id: group.id } },
        body: { provider_listing_id: listing.id },
      }),
    );
    expect(withListing.listings).toEqual([
      expect.objectContaining({ id: listing.id, provider_id: provider.id, name: "Everything", slug: "everything" }),
    ]);
  });

  it("is idempotent: reloading keeps every id and adds no rows", async () => {
    const count = async () =>
      Promise.all(
        (
          [
            "providers",
            "provider_versions",
            "provider_auth_methods",
            "provider_listings",
            "servers",
            "publishers",
          ] as const
        ).map(async (table) =>
          Number((await t.db.selectFrom(table).select(t.db.fn.countAll<string>().as("n")).executeTakeFirstOrThrow()).n),
        ),
      );
    const before = await count();
    const ids = await loadCatalog(t.db, readCatalog([BUILTIN_CATALOG_DIR]));
    expect(await count()).toEqual(before);
    expect(ids.get("everything")).toBe((await everything()).id);
    const scopes = async () =>
      (
        await t.db
          .selectFrom("provider_auth_methods")
          .select("scopes")
          .where("key", "=", "oauth")
          .executeTakeFirstOrThrow()
      ).scopes;
    const first = await scopes();
    await loadCatalog(t.db, readCatalog([BUILTIN_CATALOG_DIR]));
    expect(await scopes()).toEqual(first);
  });

  it("rejects an invalid entry with its file name and the path of each problem", () => {
    const dir = catalogDir({
      "broken.yaml":
        "slug: Not A Slug\nname: x\npublisher: {slug: p, name: P}\ncurrent_version: '1'\nversions: []\nauth_methods: []\n",
    });
    expect(() => readCatalog([dir])).toThrow(/broken\.yaml[\s\S]*\/slug[\s\S]*\/versions/);
  });

  it("rejects a current_version that is not declared, and duplicate slugs", () => {
    const entry = (slug: string, current: string) =>
      [
        `slug: ${slug}`,
        "name: X",
        "publisher: {slug: p, name: P}",
        `current_version: "${current}"`,
        "versions:",
        "  - {version: '1', status: released, runtime: {type: remote, url: 'http://127.0.0.1:1/mcp', protocol: streamable_http}, config_schema: {type: object}, tools: []}",
        "auth_methods: []",
      ].join("\n");
    expect(() => readCatalog([catalogDir({ "a.yaml": entry("x", "2") })])).toThrow(/current_version 2 is not among/);
    expect(() => readCatalog([catalogDir({ "a.yaml": entry("x", "1"), "b.yaml": entry("x", "1") })])).toThrow(
      /declared twice/,
    );
    expect(() => readCatalog([BUILTIN_CATALOG_DIR, catalogDir({ "e.yaml": entry("everything", "1") })])).toThrow(
      /declared twice/,
    );
  });

  it("reloads at start only when the catalog files changed, after a partial load, or when forced", async () => {
    const entry = (name: string) =>
      [
        "slug: synced",
        `name: ${name}`,
        "publisher: {slug: p, name: P}",
        "current_version: '1'",
        "versions:",
        "  - {version: '1', status: released, runtime: {type: remote, url: 'http://127.0.0.1:1/mcp', protocol: streamable_http}, config_schema: {type: object}, tools: []}",
        "auth_methods: []",
      ].join("\n");
    const dir = catalogDir({ "synced.yaml": entry("First") });
    const dirs = [BUILTIN_CATALOG_DIR, dir];
    const name = async () =>
      (await t.db.selectFrom("providers").select("name").where("slug", "=", "synced").executeTakeFirstOrThrow()).name;

    expect(await syncCatalog(t.db, dirs)).toBe(true);
    expect(await name()).toBe("First");
    expect(await syncCatalog(t.db, dirs)).toBe(false);

    writeFileSync(join(dir, "synced.yaml"), entry("Second"));
    expect(await syncCatalog(t.db, dirs)).toBe(true);
    expect(await name()).toBe("Second");
    expect(await syncCatalog(t.db, [BUILTIN_CATALOG_DIR])).toBe(true);
    expect(await syncCatalog(t.db, [BUILTIN_CATALOG_DIR])).toBe(false);

    // A partial load (the catalog CLI) may override entries, so the next start reloads the whole catalog.
    await loadCatalog(t.db, readCatalog([dir]));
    expect(await syncCatalog(t.db, [BUILTIN_CATALOG_DIR])).toBe(true);
    expect(await syncCatalog(t.db, [BUILTIN_CATALOG_DIR], true)).toBe(true);
  });
});

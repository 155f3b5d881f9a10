import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { OAUTH_TOKEN_SCHEMA } from "../../../src/catalog/loader.ts";
import { createRemote } from "../../custom-providers/support.ts";
import { catalogEntry, catalogProvider, loadTestCatalog } from "../../support/catalog-fixtures.ts";
import { useTestServer } from "../../support/fixture.ts";

const t = useTestServer();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Nothing listens there: custom providers made without a job runner stay queued, which is all these tests need. */
const NOWHERE = "http://127.0.0.1:9/mcp";

describe("providers: happy paths", () => {
  it("shows a built-in catalog provider with its publisher, versions, auth methods and config schema", async () => {
    const github = await catalogProvider(t.db, "github");
    const listing = await t.db
      .selectFrom("provider_listings")
      .select("id")
      .where("provider_id", "=", github.providerId)
      .executeTakeFirstOrThrow();
    const provider = await unwrap(
      t.client.GET("/providers/{provider_id}", { params: { path: { provider_id: github.providerId } } }),
    );
    const version = {
      object: "provider.version",
      id: github.versions["1.0.0"],
      version: "1.0.0",
      status: "released",
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    };
    expect(provider).toEqual({
      object: "provider",
      id: github.providerId,
      type: "catalog",
      name: "GitHub",
      description: expect.stringContaining("GitHub's hosted MCP server"),
      slug: "github",
      metadata: { homepage: "https://github.com/github/github-mcp-server" },
      publisher: {
        object: "provider.publisher",
        id: expect.stringMatching(/^pub_/),
        name: "GitHub",
        description: "GitHub, Inc.",
        slug: "github",
        image_url: "https://github.githubassets.com/favicons/favicon.png",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      },
      current_version: version,
      config_schema: expect.objectContaining({ properties: { toolsets: expect.objectContaining({ type: "string" }) } }),
      versions: [version],
      auth_methods: [
        expect.objectContaining({
          object: "provider.auth_method",
          type: "oauth",
          name: "GitHub OAuth app",
          input_schema: OAUTH_TOKEN_SCHEMA,
          scopes: [
            expect.objectContaining({ object: "provider.auth_method.scope", scope: "repo", name: "Repositories" }),
            expect.objectContaining({ object: "provider.auth_method.scope", scope: "read:org" }),
          ],
          provider_id: github.providerId,
          provider_specification_id: github.versions["1.0.0"],
        }),
        expect.objectContaining({
          type: "token",
          scopes: [],
          input_schema: expect.objectContaining({ required: ["token"] }),
        }),
      ],
      provider_listing_id: listing.id,
      custom_provider_id: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    // The OAuth endpoints stay internal: the method shows what a user chooses, not how the flow is wired.
    expect(JSON.stringify(provider)).not.toContain("authorization_endpoint");

    const listed = await unwrap(t.client.GET("/providers", { params: { query: { id: [github.providerId] } } }));
    expect(listed.items).toEqual([provider]);
  });

  it("lists every catalog provider to every instance, with the current version's config schema", async () => {
    const loaded = await loadTestCatalog(t.db, [
      catalogEntry("versioned", {
        versions: [
          { version: "1.0.0", config_schema: { type: "object", properties: { a: { type: "string" } } } },
          { version: "2.0.0", config_schema: { type: "object", properties: { b: { type: "string" } } } },
        ],
        current_version: "1.0.0",
      }),
    ]);
    const versioned = loaded.versioned;
    if (!versioned) throw new Error("not loaded");
    const mine = await unwrap(t.client.GET("/providers", { params: { query: { limit: 100 } } }));
    const other = await t.createTenant("another");
    const theirs = await unwrap(other.client.GET("/providers", { params: { query: { limit: 100 } } }));
    expect(theirs).toEqual(mine);
    expect(mine.items.map((p) => p.slug)).toEqual(expect.arrayContaining(["everything", "github", "versioned"]));
    const provider = mine.items.find((p) => p.id === versioned.providerId);
    expect(provider?.versions.map((v) => v.version)).toEqual(["1.0.0", "2.0.0"]);
    expect(provider?.current_version?.id).toBe(versioned.versions["1.0.0"]);
    expect(provider?.config_schema).toEqual({ type: "object", properties: { a: { type: "string" } } });
  });

  it("shows the instance's custom providers as type custom, linked to their custom provider", async () => {
    const custom = await createRemote(t, NOWHERE, "Weather station", { description: "Forecasts" });
    const provider = await unwrap(
      t.client.GET("/providers/{provider_id}", { params: { path: { provider_id: custom.provider.id } } }),
    );
    expect(provider).toMatchObject({
      object: "provider",
      id: custom.provider.id,
      type: "custom",
      name: "Weather station",
      description: "Forecasts",
      slug: custom.provider.slug,
      publisher: custom.provider.publisher,
      // v1 is queued: nothing is in production yet.
      current_version: null,
      config_schema: null,
      versions: [{ object: "provider.version", version: "v1", status: "pending" }],
      // A server added by URL may ask for MCP OAuth: its method is there from the start.
      auth_methods: [expect.objectContaining({ object: "provider.auth_method", type: "mcp_oauth", scopes: [] })],
      provider_listing_id: expect.stringMatching(/^plg_/),
      custom_provider_id: custom.id,
    });
    const customs = await unwrap(t.client.GET("/providers", { params: { query: { type: ["custom"] } } }));
    expect(customs.items.map((p) => p.id)).toEqual([custom.provider.id]);
    const catalog = await unwrap(t.client.GET("/providers", { params: { query: { type: ["catalog"], limit: 100 } } }));
    expect(catalog.items.every((p) => p.type === "catalog" && p.custom_provider_id === null)).toBe(true);
    const both = await unwrap(
      t.client.GET("/providers", { params: { query: { type: ["catalog", "custom"], limit: 100 } } }),
    );
    expect(both.items).toHaveLength(catalog.items.length + 1);
  });

  it("filters by search in name, slug and description ignoring case, by id and by publisher id or slug", async () => {
    await loadTestCatalog(t.db, [
      catalogEntry("alpha-search", { name: "Alpha Tools", description: "Finds NEEDLE here" }),
      catalogEntry("beta-search", { name: "Beta", description: null }),
      catalogEntry("percent-search", { name: "100% real", description: null }),
    ]);
    const slugs = async (query: Record<string, unknown>) =>
      (await unwrap(t.client.GET("/providers", { params: { query: { limit: 100, ...query } } }))).items
        .map((p) => p.slug)
        .sort();
    expect(await slugs({ search: "alpha tools" })).toEqual(["alpha-search"]);
    expect(await slugs({ search: "needle" })).toEqual(["alpha-search"]);
    expect(await slugs({ search: "BETA-SEA" })).toEqual(["beta-search"]);
    // % and _ are literal text, not wildcards.
    expect(await slugs({ search: "0%" })).toEqual(["percent-search"]);
    expect(await slugs({ search: "_" })).toEqual([]);
    expect(await slugs({ search: "-search", publisher: ["toolplane-tests"] })).toEqual([
      "alpha-search",
      "beta-search",
      "percent-search",
    ]);

    const github = await catalogProvider(t.db, "github");
    const everything = await catalogProvider(t.db, "everything");
    expect(await slugs({ id: [github.providerId, everything.providerId] })).toEqual(["everything", "github"]);
    expect(await slugs({ id: [github.providerId], search: "alpha" })).toEqual([]);
    const publisherId = (
      await unwrap(t.client.GET("/providers/{provider_id}", { params: { path: { provider_id: github.providerId } } }))
    ).publisher?.id;
    expect(await slugs({ publisher: [publisherId, "modelcontextprotocol"] })).toEqual(["everything", "github"]);
    expect(await slugs({ publisher: ["nobody"] })).toEqual([]);
  });

  it("pages through a filtered list with limit, cursors, after, before and order", async () => {
    const tenant = await t.createTenant("paging");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await createRemote({ ...t, client: tenant.client }, NOWHERE, `Paged ${i}`)).provider.id);
    }
    const page = (query: Record<string, unknown>) =>
      unwrap(tenant.client.GET("/providers", { params: { query: { type: ["custom"], ...query } } }));
    const first = await page({ limit: 2 });
    expect(first.items.map((p) => p.id)).toEqual(ids.slice(0, 2));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true, previous_cursor: null });
    const second = await page({ limit: 2, cursor: first.pagination.next_cursor });
    expect(second.items.map((p) => p.id)).toEqual(ids.slice(2, 4));
    const back = await page({ limit: 2, cursor: second.pagination.previous_cursor });
    expect(back.items.map((p) => p.id)).toEqual(ids.slice(0, 2));
    expect((await page({ after: ids[3] })).items.map((p) => p.id)).toEqual([ids[4]]);
    expect((await page({ before: ids[1] })).items.map((p) => p.id)).toEqual([ids[0]]);
    expect((await page({ order: "desc", limit: 2 })).items.map((p) => p.id)).toEqual([ids[4], ids[3]]);
    const all: string[] = [];
    for await (const p of tenant.client.paginate("/providers", {
      params: { query: { type: ["custom"], limit: 2 } },
    })) {
      all.push(p.id);
    }
    expect(all).toEqual(ids);
  });
});

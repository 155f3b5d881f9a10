import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  createRemote,
  firstVersion,
  useRemoteProviderSetup,
  waitForDeployment,
} from "../../custom-providers/support.ts";
import { catalogEntry, catalogProvider, loadTestCatalog, RICH_CONFIG_SCHEMA } from "../../support/catalog-fixtures.ts";

// A deploy job runner and a real MCP upstream: custom provider versions get their tools from a real deployment.
const { t, upstream } = useRemoteProviderSetup();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("provider versions: happy paths", () => {
  it("lists and gets a catalog provider's versions with their config schemas and tools", async () => {
    const loaded = await loadTestCatalog(t.db, [
      catalogEntry("two-versions", {
        versions: [
          { version: "1.0.0", status: "deprecated" },
          { version: "2.0.0", config_schema: RICH_CONFIG_SCHEMA },
        ],
      }),
    ]);
    const provider = loaded["two-versions"];
    if (!provider) throw new Error("not loaded");
    const path = { provider_id: provider.providerId };
    const page = await unwrap(t.client.GET("/providers/{provider_id}/versions", { params: { path } }));
    expect(page.items).toEqual([
      {
        object: "provider.version",
        id: provider.versions["1.0.0"],
        version: "1.0.0",
        status: "deprecated",
        provider_id: provider.providerId,
        config_schema: { type: "object", properties: {}, additionalProperties: false },
        tools: [{ name: "echo", description: "Echoes" }],
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      },
      expect.objectContaining({
        id: provider.versions["2.0.0"],
        version: "2.0.0",
        status: "released",
        config_schema: RICH_CONFIG_SCHEMA,
      }),
    ]);
    expect(page.pagination).toEqual({
      has_more_before: false,
      has_more_after: false,
      next_cursor: null,
      previous_cursor: null,
    });
    const second = page.items[1];
    const got = await unwrap(
      t.client.GET("/providers/{provider_id}/versions/{provider_version_id}", {
        params: { path: { ...path, provider_version_id: second?.id ?? "" } },
      }),
    );
    expect(got).toEqual(second);
    // The short view embedded in the provider is the same version.
    const full = await unwrap(t.client.GET("/providers/{provider_id}", { params: { path } }));
    expect(full.current_version).toEqual({
      object: "provider.version",
      id: got.id,
      version: got.version,
      status: got.status,
      created_at: got.created_at,
      updated_at: got.updated_at,
    });
  });

  it("pages through versions with limit, cursor and order", async () => {
    const versions = ["1", "2", "3", "4"].map((v) => ({ version: `${v}.0.0` }));
    const loaded = await loadTestCatalog(t.db, [catalogEntry("paged-versions", { versions })]);
    const provider = loaded["paged-versions"];
    if (!provider) throw new Error("not loaded");
    const ids = versions.map((v) => provider.versions[v.version]);
    const path = { provider_id: provider.providerId };
    const list = (query: Record<string, unknown>) =>
      unwrap(t.client.GET("/providers/{provider_id}/versions", { params: { path, query } }));
    const first = await list({ limit: 3 });
    expect(first.items.map((v) => v.id)).toEqual(ids.slice(0, 3));
    const next = await list({ limit: 3, cursor: first.pagination.next_cursor });
    expect(next.items.map((v) => v.id)).toEqual(ids.slice(3));
    expect(next.pagination).toMatchObject({ has_more_after: false, has_more_before: true });
    expect((await list({ order: "desc", limit: 2 })).items.map((v) => v.id)).toEqual([ids[3], ids[2]]);
    expect((await list({ after: ids[1], before: undefined })).items.map((v) => v.id)).toEqual(ids.slice(2));
  });

  it("shows a custom provider's versions: tools discovered by its deployment, current once in production", async () => {
    const custom = await createRemote(t, upstream.url, "Forecasts");
    const v1 = await firstVersion(t, custom.id);
    await waitForDeployment(t, custom.id, v1.id);
    const path = { provider_id: custom.provider.id };
    const version = await unwrap(
      t.client.GET("/providers/{provider_id}/versions/{provider_version_id}", {
        params: { path: { ...path, provider_version_id: v1.provider_version_id ?? "" } },
      }),
    );
    expect(version).toMatchObject({
      object: "provider.version",
      id: v1.provider_version_id,
      version: "v1",
      status: "released",
      provider_id: custom.provider.id,
      tools: [
        { name: "forecast", description: "The forecast tool" },
        { name: "alerts", description: "The alerts tool" },
      ],
    });
    const provider = await unwrap(t.client.GET("/providers/{provider_id}", { params: { path } }));
    expect(provider.current_version?.id).toBe(version.id);
    expect(provider.config_schema).toEqual(version.config_schema);
  });

  it("shows the built-in catalog's versions to every instance", async () => {
    const everything = await catalogProvider(t.db, "everything");
    const path = { provider_id: everything.providerId };
    const other = await t.createTenant("other");
    const mine = await unwrap(t.client.GET("/providers/{provider_id}/versions", { params: { path } }));
    const theirs = await unwrap(other.client.GET("/providers/{provider_id}/versions", { params: { path } }));
    expect(theirs).toEqual(mine);
    expect(mine.items[0]?.tools.map((tool) => tool.name)).toContain("echo");
  });
});

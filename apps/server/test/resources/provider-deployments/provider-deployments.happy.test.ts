import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  catalogProvider,
  countRows,
  EMPTY_CONFIG_SCHEMA,
  type LoadedProvider,
  loadTestProvider,
  RICH_CONFIG_SCHEMA,
  richConfigData,
  setVersionStatus,
} from "../../support/catalog-fixtures.ts";
import { seedCatalogProvider } from "../../support/seed.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

let t: TestServer;
let everything: LoadedProvider;
let github: LoadedProvider;
beforeAll(async () => {
  t = await startTestServer();
  everything = await catalogProvider(t.db, "everything");
  github = await catalogProvider(t.db, "github");
});
afterAll(() => t.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type Client = TestServer["client"];

async function deploy(
  body: { name: string; provider_id: string } & Record<string, unknown>,
  client: Client = t.client,
) {
  const res = await client.POST("/provider-deployments", { body: body as never });
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

async function getDeployment(id: string, client: Client = t.client) {
  return unwrap(
    client.GET("/provider-deployments/{provider_deployment_id}", { params: { path: { provider_deployment_id: id } } }),
  );
}

async function configSchema(id: string) {
  return unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
      params: { path: { provider_deployment_id: id } },
    }),
  );
}

async function createConfig(deploymentId: string, name: string, data: Record<string, unknown> = {}) {
  return unwrap(
    t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, config: { type: "inline", data } },
    }),
  );
}

async function createVault(deploymentId: string, name: string, data: Record<string, unknown>) {
  return unwrap(
    t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, data },
    }),
  );
}

/** Deployment ids matching a raw query string, walking every page. */
async function listIds(query: string, client: { fetch: (p: string) => Promise<Response> } = t) {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await client.fetch(`/provider-deployments?limit=100&${query}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status, query).toBe(200);
    const page = (await res.json()) as { items: { id: string }[]; pagination: { next_cursor: string | null } };
    ids.push(...page.items.map((d) => d.id));
    cursor = page.pagination.next_cursor;
  } while (cursor);
  return ids;
}

describe("provider deployments: create and read", () => {
  it("creates an unpinned deployment that follows the provider's current version", async () => {
    const res = await t.client.POST("/provider-deployments", {
      body: {
        name: "Everything (staging)",
        description: "The reference server",
        metadata: { team: "platform", nested: { a: [1, 2] } },
        provider_id: everything.providerId,
      },
    });
    expect(res.response.status).toBe(201);
    const created = res.data;
    if (!created) throw new Error("no body");
    expect(created).toEqual({
      object: "provider.deployment",
      id: expect.stringMatching(/^pde_[0-9a-z]{26}$/),
      status: "active",
      name: "Everything (staging)",
      description: "The reference server",
      metadata: { team: "platform", nested: { a: [1, 2] } },
      provider_id: everything.providerId,
      provider: {
        object: "provider",
        id: everything.providerId,
        name: "Everything",
        description: expect.stringContaining("MCP reference server"),
        slug: "everything",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      },
      locked_version: null,
      default_config: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);
    expect(await getDeployment(created.id)).toEqual(created);

    const row = await t.db
      .selectFrom("provider_deployments")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      instance_id: t.tenant.instanceId,
      provider_id: everything.providerId,
      locked_version_id: null,
      default_config_id: null,
    });

    const schema = await configSchema(created.id);
    expect(schema).toEqual({
      object: "provider.config_schema",
      provider_id: everything.providerId,
      provider_version_id: everything.currentVersionId,
      schema: EMPTY_CONFIG_SCHEMA,
    });
  });

  it("defaults description and metadata to null", async () => {
    const created = await deploy({ name: "Bare", provider_id: github.providerId });
    expect(created).toMatchObject({ description: null, metadata: null, locked_version: null, default_config: null });
    expect(created.provider).toMatchObject({ slug: "github", name: "GitHub" });
  });

  it("pins a version: locked_version has the version's shape and the config schema is the pinned one's", async () => {
    const provider = await loadTestProvider(t.db, "pinnable", {
      versions: [
        { version: "1.0.0", status: "deprecated", config_schema: RICH_CONFIG_SCHEMA },
        { version: "2.0.0", config_schema: EMPTY_CONFIG_SCHEMA },
      ],
    });
    const v1 = provider.versions["1.0.0"] ?? "";
    const pinned = await deploy({
      name: "Pinned to 1.0.0",
      provider_id: provider.providerId,
      locked_provider_version_id: v1,
    });
    expect(pinned.status).toBe("active"); // deprecated versions still run
    expect(pinned.locked_version).toEqual({
      object: "provider.version",
      id: v1,
      version: "1.0.0",
      status: "deprecated",
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(await configSchema(pinned.id)).toEqual({
      object: "provider.config_schema",
      provider_id: provider.providerId,
      provider_version_id: v1,
      schema: RICH_CONFIG_SCHEMA,
    });

    const current = await deploy({
      name: "Pinned to current",
      provider_id: provider.providerId,
      locked_provider_version_id: provider.versions["2.0.0"] ?? "",
    });
    expect(current.locked_version).toMatchObject({ version: "2.0.0", status: "released" });
    const row = await t.db
      .selectFrom("provider_deployments")
      .select("locked_version_id")
      .where("id", "=", pinned.id)
      .executeTakeFirstOrThrow();
    expect(row.locked_version_id).toBe(v1);
  });

  it("sets the default config by reference, shown as a preview without data", async () => {
    const source = await deploy({ name: "Config source", provider_id: github.providerId });
    const config = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: source.id } },
        body: {
          name: "Repos only",
          description: "Only the repos toolset",
          metadata: { env: "staging" },
          config: { type: "inline", data: { toolsets: "repos" } },
        },
      }),
    );
    const withConfig = await deploy({
      name: "With default config",
      provider_id: github.providerId,
      config: { type: "reference", provider_config_id: config.id },
    });
    expect(withConfig.default_config).toEqual({
      object: "provider.config",
      id: config.id,
      name: "Repos only",
      description: "Only the repos toolset",
      metadata: { env: "staging" },
      provider_id: github.providerId,
      created_at: config.created_at,
      updated_at: config.updated_at,
    });
    expect(JSON.stringify(withConfig)).not.toContain("toolsets");
    expect((await getDeployment(withConfig.id)).default_config?.id).toBe(config.id);

    // The same config can be the default of its own deployment's siblings: it is shared, not copied.
    const another = await deploy({
      name: "Shares the config",
      provider_id: github.providerId,
      config: { type: "reference", provider_config_id: config.id },
    });
    expect(another.default_config?.id).toBe(config.id);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: source.id })).toBe(1);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: another.id })).toBe(0);

    // Renaming the config shows in the preview.
    await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: { provider_deployment_id: source.id, provider_config_id: config.id } },
        body: { name: "Renamed config" },
      }),
    );
    expect((await getDeployment(withConfig.id)).default_config?.name).toBe("Renamed config");
  });
});

describe("provider deployments: versions over time", () => {
  it("keeps a pinned deployment on its version when the current version changes, while an unpinned one follows", async () => {
    const first = await loadTestProvider(t.db, "moving", {
      versions: [
        { version: "1.0.0", config_schema: { ...EMPTY_CONFIG_SCHEMA, properties: { v1_only: { type: "string" } } } },
      ],
    });
    const v1 = first.versions["1.0.0"] ?? "";
    const pinned = await deploy({ name: "Pinned", provider_id: first.providerId, locked_provider_version_id: v1 });
    const unpinned = await deploy({ name: "Unpinned", provider_id: first.providerId });
    expect((await configSchema(unpinned.id)).provider_version_id).toBe(v1);
    const oldConfig = await createConfig(unpinned.id, "Made on 1.0.0", { v1_only: "x" });

    // The catalog moves on: 1.0.0 is deprecated, 2.0.0 (with another config schema) is current.
    const second = await loadTestProvider(t.db, "moving", {
      current_version: "2.0.0",
      versions: [
        {
          version: "1.0.0",
          status: "deprecated",
          config_schema: { ...EMPTY_CONFIG_SCHEMA, properties: { v1_only: { type: "string" } } },
        },
        { version: "2.0.0", config_schema: RICH_CONFIG_SCHEMA },
      ],
    });
    expect(second.providerId).toBe(first.providerId);
    expect(second.versions["1.0.0"]).toBe(v1);
    const v2 = second.versions["2.0.0"] ?? "";
    expect(second.currentVersionId).toBe(v2);

    const pinnedNow = await getDeployment(pinned.id);
    expect(pinnedNow).toMatchObject({
      status: "active",
      locked_version: { id: v1, version: "1.0.0", status: "deprecated" },
    });
    expect(await configSchema(pinned.id)).toMatchObject({
      provider_version_id: v1,
      schema: { properties: { v1_only: {} } },
    });

    const unpinnedNow = await getDeployment(unpinned.id);
    expect(unpinnedNow).toMatchObject({ status: "active", locked_version: null });
    expect(await configSchema(unpinned.id)).toEqual({
      object: "provider.config_schema",
      provider_id: first.providerId,
      provider_version_id: v2,
      schema: RICH_CONFIG_SCHEMA,
    });

    // New configs are validated against the version each deployment runs now.
    const onPinned = await createConfig(pinned.id, "Still 1.0.0 data", { v1_only: "y" });
    expect(onPinned.provider_deployment_id).toBe(pinned.id);
    const rejected = await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: unpinned.id } },
      body: { name: "Old shape", config: { type: "inline", data: { v1_only: "y" } } },
    });
    expect(rejected.response.status).toBe(400);
    await createConfig(unpinned.id, "New shape", richConfigData());
    const rows = await t.db
      .selectFrom("provider_configs")
      .select(["id", "provider_version_id"])
      .where("provider_deployment_id", "in", [pinned.id, unpinned.id])
      .orderBy("id")
      .execute();
    expect(rows.map((r) => r.provider_version_id)).toEqual([v1, v1, v2]);
    // A config made before the change is kept.
    expect(rows[0]?.id).toBe(oldConfig.id);

    // The provider_version_id filter follows the effective version.
    expect(await listIds(`provider_version_id=${v1}`)).toEqual([pinned.id]);
    expect(await listIds(`provider_version_id=${v2}`)).toEqual([unpinned.id]);
  });
});

describe("provider deployments: list", () => {
  it("filters by search: case-insensitive substring, with % and _ matched literally", async () => {
    const tenant = await t.createTenant("search");
    const names = [
      "Alpha Staging",
      "alpha production",
      "Beta STAGING",
      "100% ready",
      "100 percent",
      "snake_case",
      "snakeXcase",
      "back\\slash",
    ];
    const ids: Record<string, string> = {};
    for (const name of names)
      ids[name] = (await deploy({ name, provider_id: everything.providerId }, tenant.client)).id;
    const search = async (text: string) => {
      const res = await tenant.client.GET("/provider-deployments", { params: { query: { search: text, limit: 100 } } });
      expect(res.response.status, text).toBe(200);
      return (res.data?.items ?? []).map((d) => d.name).sort();
    };
    expect(await search("staging")).toEqual(["Alpha Staging", "Beta STAGING"]);
    expect(await search("ALPHA")).toEqual(["Alpha Staging", "alpha production"]);
    expect(await search("pha sta")).toEqual(["Alpha Staging"]);
    expect(await search("%")).toEqual(["100% ready"]);
    expect(await search("100%")).toEqual(["100% ready"]);
    expect(await search("_")).toEqual(["snake_case"]);
    expect(await search("e_c")).toEqual(["snake_case"]);
    expect(await search("\\")).toEqual(["back\\slash"]);
    expect(await search("nothing like it")).toEqual([]);
    // Names only, not descriptions; case folding beyond ASCII.
    await deploy({ name: "Gamma", description: "staging box", provider_id: everything.providerId }, tenant.client);
    expect(await search("staging")).toEqual(["Alpha Staging", "Beta STAGING"]);
    await deploy({ name: "École Équipe", provider_id: everything.providerId }, tenant.client);
    expect(await search("éQUIPE")).toEqual(["École Équipe"]);
    expect(await search("ÉCOLE")).toEqual(["École Équipe"]);
    // The text is matched as sent: an encoded `%25` arrives as the three characters `%25`, matching nothing.
    const raw = await tenant.client.GET("/provider-deployments", { params: { query: { search: "%25" } } });
    expect(raw.data?.items).toEqual([]);
    expect(Object.keys(ids)).toHaveLength(names.length);
  });

  it("filters by provider_id and provider_version_id in every Union form, and by status", async () => {
    const tenant = await t.createTenant("filters");
    const tf = {
      fetch: (path: string) => fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } }),
    };
    const provider = await loadTestProvider(t.db, "filterable", {
      versions: [{ version: "1.0.0", status: "deprecated" }, { version: "2.0.0" }, { version: "3.0.0" }],
      current_version: "2.0.0",
    });
    const [v1, v2, v3] = ["1.0.0", "2.0.0", "3.0.0"].map((v) => provider.versions[v] ?? "");
    const bare = await seedCatalogProvider(t.db, "No versions");

    const ev = await deploy({ name: "everything", provider_id: everything.providerId }, tenant.client);
    const gh = await deploy({ name: "github", provider_id: github.providerId }, tenant.client);
    const onV1 = await deploy(
      { name: "on v1", provider_id: provider.providerId, locked_provider_version_id: v1 },
      tenant.client,
    );
    const followsV2 = await deploy({ name: "follows v2", provider_id: provider.providerId }, tenant.client);
    const onV3 = await deploy(
      { name: "on v3", provider_id: provider.providerId, locked_provider_version_id: v3 },
      tenant.client,
    );
    const noVersion = await deploy({ name: "no version", provider_id: bare.providerId }, tenant.client);
    // A pinned version that stops being runnable (a failed custom version, say) makes its deployment inactive.
    await setVersionStatus(t.db, v3 ?? "", "failed");

    expect(await listIds("", tf)).toEqual([ev.id, gh.id, onV1.id, followsV2.id, onV3.id, noVersion.id]);
    expect(await listIds(`provider_id=${provider.providerId}`, tf)).toEqual([onV1.id, followsV2.id, onV3.id]);
    const two = [everything.providerId, github.providerId];
    for (const q of [
      `provider_id=${two[0]}&provider_id=${two[1]}`,
      `provider_id[]=${two[0]}&provider_id[]=${two[1]}`,
      `provider_id[1]=${two[1]}&provider_id[0]=${two[0]}`,
      `provider_id%5B%5D=${two[0]}&provider_id%5B%5D=${two[1]}`,
    ]) {
      expect(await listIds(q, tf), q).toEqual([ev.id, gh.id]);
    }
    expect(await listIds("provider_id=pro_00000000000000000000000000", tf)).toEqual([]);

    // The effective version: the locked one, or the provider's current one.
    expect(await listIds(`provider_version_id=${v2}`, tf)).toEqual([followsV2.id]);
    expect(await listIds(`provider_version_id=${everything.currentVersionId}`, tf)).toEqual([ev.id]);
    for (const q of [
      `provider_version_id=${v1}&provider_version_id=${v3}`,
      `provider_version_id[]=${v1}&provider_version_id[]=${v3}`,
      `provider_version_id[0]=${v1}&provider_version_id[1]=${v3}`,
    ]) {
      expect(await listIds(q, tf), q).toEqual([onV1.id, onV3.id]);
    }

    expect(await listIds("status=active", tf)).toEqual([ev.id, gh.id, onV1.id, followsV2.id]);
    expect(await listIds("status=inactive", tf)).toEqual([onV3.id, noVersion.id]);
    expect((await getDeployment(onV3.id, tenant.client)).status).toBe("inactive");
    expect((await getDeployment(noVersion.id, tenant.client)).status).toBe("inactive");
    expect((await getDeployment(onV1.id, tenant.client)).status).toBe("active");

    // Filters combine with AND.
    expect(await listIds(`provider_id=${provider.providerId}&status=inactive`, tf)).toEqual([onV3.id]);
    expect(await listIds(`provider_id=${provider.providerId}&search=ON%20V&status=active`, tf)).toEqual([onV1.id]);
    expect(await listIds(`provider_version_id=${v1}&status=inactive`, tf)).toEqual([]);

    // Back to runnable: the status is derived, never stored.
    await setVersionStatus(t.db, v3 ?? "", "released");
    expect(await listIds("status=inactive", tf)).toEqual([noVersion.id]);
    // A provider losing its current version makes its unpinned deployments inactive, not its pinned ones.
    await t.db
      .updateTable("providers")
      .set({ current_version_id: null })
      .where("id", "=", provider.providerId)
      .execute();
    expect(await listIds("status=inactive", tf)).toEqual([followsV2.id, noVersion.id]);
    expect(await listIds(`provider_version_id=${v2}`, tf)).toEqual([]);
  });

  it("pages through a list with limit, cursors, after, before and order, filters included", async () => {
    const tenant = await t.createTenant("paging");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (
          await deploy(
            { name: `Page ${i}`, provider_id: i % 2 ? github.providerId : everything.providerId },
            tenant.client,
          )
        ).id,
      );
    }
    const list = (query: Record<string, unknown>) =>
      unwrap(tenant.client.GET("/provider-deployments", { params: { query: query as never } }));

    const all = await list({});
    expect(all.items.map((d) => d.id)).toEqual(ids);
    expect(all.pagination).toEqual({
      has_more_before: false,
      has_more_after: false,
      next_cursor: null,
      previous_cursor: null,
    });

    const first = await list({ limit: 3 });
    expect(first.items.map((d) => d.id)).toEqual(ids.slice(0, 3));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true, previous_cursor: null });
    const second = await list({ limit: 3, cursor: first.pagination.next_cursor ?? "" });
    expect(second.items.map((d) => d.id)).toEqual(ids.slice(3, 6));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });
    const back = await list({ limit: 3, cursor: second.pagination.previous_cursor ?? "" });
    expect(back.items.map((d) => d.id)).toEqual(ids.slice(0, 3));

    const after = await list({ after: ids[4] });
    expect(after.items.map((d) => d.id)).toEqual(ids.slice(5));
    expect(after.pagination).toMatchObject({ has_more_before: true, has_more_after: false, next_cursor: null });
    const before = await list({ before: ids[2], limit: 1 });
    expect(before.items.map((d) => d.id)).toEqual([ids[1]]);
    expect(before.pagination).toMatchObject({ has_more_before: true, has_more_after: true });

    const desc = await list({ order: "desc", limit: 2 });
    expect(desc.items.map((d) => d.id)).toEqual([ids[6], ids[5]]);
    const descNext = await list({ cursor: desc.pagination.next_cursor ?? "", limit: 2 });
    expect(descNext.items.map((d) => d.id)).toEqual([ids[4], ids[3]]);

    // Paging within a filter: every github deployment (odd indexes), one per page.
    const githubIds = ids.filter((_, i) => i % 2 === 1);
    const walked: string[] = [];
    for await (const d of tenant.client.paginate("/provider-deployments", {
      params: { query: { limit: 1, provider_id: [github.providerId] } },
    })) {
      walked.push(d.id);
    }
    expect(walked).toEqual(githubIds);
    const filteredFirst = await list({ limit: 2, provider_id: [github.providerId] });
    expect(filteredFirst.pagination.has_more_after).toBe(true);
    const filteredLast = await list({ after: githubIds[1], provider_id: [github.providerId] });
    expect(filteredLast.items.map((d) => d.id)).toEqual([githubIds[2]]);
    expect(filteredLast.pagination).toMatchObject({ has_more_before: true, has_more_after: false });
  });
});

describe("provider deployments: update", () => {
  it("updates name, description and metadata; null clears; omitted fields stay", async () => {
    const provider = await loadTestProvider(t.db, "updatable", {
      versions: [{ version: "1.0.0" }, { version: "2.0.0" }],
    });
    const source = await deploy({ name: "Source", provider_id: provider.providerId });
    const config = await createConfig(source.id, "Default");
    const created = await deploy({
      name: "Before",
      description: "Old",
      metadata: { a: 1 },
      provider_id: provider.providerId,
      locked_provider_version_id: provider.versions["1.0.0"] ?? "",
      config: { type: "reference", provider_config_id: config.id },
    });
    const path = { provider_deployment_id: created.id };

    const renamed = await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}", { params: { path }, body: { name: "After" } }),
    );
    expect(renamed).toEqual({ ...created, name: "After", updated_at: expect.stringMatching(ISO) });
    expect(renamed.updated_at >= created.updated_at).toBe(true);

    const replaced = await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}", {
        params: { path },
        body: { description: "New", metadata: { b: { c: true } } },
      }),
    );
    expect(replaced).toMatchObject({ name: "After", description: "New", metadata: { b: { c: true } } });

    const cleared = await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}", {
        params: { path },
        body: { description: null, metadata: null },
      }),
    );
    expect(cleared).toMatchObject({ name: "After", description: null, metadata: null });
    // The provider, the pinned version and the default config stay as they were created.
    expect(cleared).toMatchObject({
      provider_id: provider.providerId,
      locked_version: { id: provider.versions["1.0.0"] },
      default_config: { id: config.id },
      created_at: created.created_at,
    });

    const untouched = await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}", { params: { path }, body: {} }),
    );
    expect(untouched).toMatchObject({ name: "After", description: null, metadata: null });
    expect(await getDeployment(created.id)).toEqual(untouched);
  });
});

describe("provider deployments: delete", () => {
  it("returns the deleted deployment and removes it, its configs and its vaults", async () => {
    const gone = await deploy({ name: "To delete", description: "bye", provider_id: github.providerId });
    const keep = await deploy({ name: "To keep", provider_id: github.providerId });
    const configs = [await createConfig(gone.id, "c1", { toolsets: "repos" }), await createConfig(gone.id, "c2")];
    const vaults = [
      await createVault(gone.id, "v1", { toolsets: "issues" }),
      await createVault(gone.id, "v2", { x: 1 }),
    ];
    const keptConfig = await createConfig(keep.id, "kept");
    const keptVault = await createVault(keep.id, "kept", { toolsets: "a" });
    // A config of the other deployment made from a vault of the deleted one holds its own copy.
    const copied = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: keep.id } },
        body: { name: "from gone's vault", config: { type: "vault", provider_config_vault_id: vaults[0]?.id ?? "" } },
      }),
    );

    const res = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: gone.id } },
    });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(gone);

    const missing = await t.client.GET("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: gone.id } },
    });
    expect(missing.response.status).toBe(404);
    expect(await t.db.selectFrom("provider_deployments").select("id").where("id", "=", gone.id).execute()).toEqual([]);
    expect(
      await t.db
        .selectFrom("provider_configs")
        .select("id")
        .where(
          "id",
          "in",
          configs.map((c) => c.id),
        )
        .execute(),
    ).toEqual([]);
    expect(
      await t.db
        .selectFrom("provider_config_vaults")
        .select("id")
        .where(
          "id",
          "in",
          vaults.map((v) => v.id),
        )
        .execute(),
    ).toEqual([]);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: gone.id })).toBe(0);
    expect(await countRows(t.db, "provider_config_vaults", { column: "provider_deployment_id", value: gone.id })).toBe(
      0,
    );

    // The other deployment keeps everything.
    expect((await getDeployment(keep.id)).name).toBe("To keep");
    const keptConfigs = await t.db
      .selectFrom("provider_configs")
      .select("id")
      .where("provider_deployment_id", "=", keep.id)
      .orderBy("id")
      .execute();
    expect(keptConfigs.map((r) => r.id)).toEqual([keptConfig.id, copied.id]);
    expect(
      await t.db
        .selectFrom("provider_config_vaults")
        .select("id")
        .where("provider_deployment_id", "=", keep.id)
        .execute(),
    ).toEqual([{ id: keptVault.id }]);
  });

  it("also removes its auth credentials and the auth configs that use them", async () => {
    const d = await deploy({ name: "With auth", provider_id: github.providerId });
    const path = { provider_deployment_id: d.id };
    const oauth = await t.db
      .selectFrom("provider_auth_methods")
      .select("id")
      .where("provider_id", "=", github.providerId)
      .where("key", "=", "oauth")
      .executeTakeFirstOrThrow();
    const credentials = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path },
        body: {
          name: "OAuth app",
          config: { type: "oauth", clientId: "client-id", clientSecret: "client-secret", scopes: [] },
        },
      }),
    );
    const authConfig = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
        params: { path },
        body: {
          name: "Connection",
          provider_auth_method_id: oauth.id,
          credentials: { type: "reference", provider_auth_credentials_id: credentials.id },
        },
      }),
    );
    await createConfig(d.id, "Config", { toolsets: "repos" });

    const res = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } });
    expect(res.response.status).toBe(200);
    expect(
      await t.db.selectFrom("provider_auth_credentials").select("id").where("id", "=", credentials.id).execute(),
    ).toEqual([]);
    expect(
      await t.db.selectFrom("provider_auth_configs").select("id").where("id", "=", authConfig.id).execute(),
    ).toEqual([]);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: d.id })).toBe(0);
  });

  it("refuses with 409 while another deployment uses one of its configs as default, deleting nothing", async () => {
    const owner = await deploy({ name: "Owner", provider_id: github.providerId });
    const config = await createConfig(owner.id, "Shared default", { toolsets: "repos" });
    await createVault(owner.id, "Owner vault", { toolsets: "x" });
    const user = await deploy({
      name: "User",
      provider_id: github.providerId,
      config: { type: "reference", provider_config_id: config.id },
    });
    const before = {
      configs: await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: owner.id }),
      vaults: await countRows(t.db, "provider_config_vaults", { column: "provider_deployment_id", value: owner.id }),
    };
    expect(before).toEqual({ configs: 1, vaults: 1 });

    const refused = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: owner.id } },
    });
    expect(refused.response.status).toBe(409);
    expect(refused.error).toMatchObject({ code: "conflict", status: 409, ok: false });
    // The message names the blocking deployment and config.
    expect(refused.error?.message).toContain(user.id);
    expect(refused.error?.message).toContain(config.id);

    expect(await getDeployment(owner.id)).toEqual(owner);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: owner.id })).toBe(1);
    expect(await countRows(t.db, "provider_config_vaults", { column: "provider_deployment_id", value: owner.id })).toBe(
      1,
    );
    expect((await getDeployment(user.id)).default_config?.id).toBe(config.id);

    // Once the user is gone, the owner can be deleted.
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: user.id } },
      }),
    );
    const deleted = await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: owner.id } },
      }),
    );
    expect(deleted.id).toBe(owner.id);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: owner.id })).toBe(0);
  });

  it("deletes a deployment whose default config belongs to another deployment, leaving that config", async () => {
    const owner = await deploy({ name: "Config owner", provider_id: github.providerId });
    const config = await createConfig(owner.id, "Lent");
    const borrower = await deploy({
      name: "Borrower",
      provider_id: github.providerId,
      config: { type: "reference", provider_config_id: config.id },
    });
    const deleted = await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: borrower.id } },
      }),
    );
    expect(deleted.default_config?.id).toBe(config.id);
    expect(await t.db.selectFrom("provider_configs").select("id").where("id", "=", config.id).execute()).toEqual([
      { id: config.id },
    ]);
  });

  it("can delete a deployment of a provider without a runnable version", async () => {
    const bare = await seedCatalogProvider(t.db, "Bare provider");
    const d = await deploy({ name: "Inactive", provider_id: bare.providerId });
    expect(d.status).toBe("inactive");
    const deleted = await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: d.id } },
      }),
    );
    expect(deleted).toEqual(d);
  });
});

import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { configAad, vaultAad } from "../../../src/resources/provider-configs/service.ts";
import {
  catalogProvider,
  EMPTY_CONFIG_SCHEMA,
  loadTestProvider,
  RICH_CONFIG_SCHEMA,
  richConfigData,
} from "../../support/catalog-fixtures.ts";
import {
  createInlineConfig,
  createVault as createVaultAs,
  createVaultConfig,
  deploy as deployAs,
} from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";

const t = useTestServer();
const everything = fixture(() => catalogProvider(t.db, "everything"));
const github = fixture(() => catalogProvider(t.db, "github"));
const rich = fixture(() =>
  loadTestProvider(t.db, "rich-configs", {
    versions: [{ version: "1.0.0", config_schema: RICH_CONFIG_SCHEMA }],
  }),
);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const deploy = (name: string, providerId: string, extra: Record<string, unknown> = {}) =>
  deployAs(t.client, providerId, name, extra);

const createInline = (deploymentId: string, name: string, data: Record<string, unknown>) =>
  createInlineConfig(t.client, deploymentId, name, data);

const createFromVault = (deploymentId: string, name: string, vaultId: string) =>
  createVaultConfig(t.client, deploymentId, name, vaultId);

const createVault = (deploymentId: string, name: string, data: Record<string, unknown>) =>
  createVaultAs(t.client, deploymentId, name, data);

/** The stored row of a config, with its data decrypted the way the server does. */
async function storedConfig(id: string) {
  const row = await t.db.selectFrom("provider_configs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  return { row, data: t.secrets.decryptJson<Record<string, unknown>>(row.data_ciphertext, configAad(id)) };
}

describe("provider configs: config schema", () => {
  it("returns the JSON Schema of the deployment's current version", async () => {
    const d = await deploy("GitHub", github.providerId);
    const schema = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
        params: { path: { provider_deployment_id: d.id } },
      }),
    );
    expect(schema).toEqual({
      object: "provider.config_schema",
      provider_id: github.providerId,
      provider_version_id: github.currentVersionId,
      schema: {
        type: "object",
        properties: { toolsets: { type: "string", description: expect.stringContaining("toolsets") } },
        additionalProperties: false,
      },
    });

    const ev = await deploy("Everything", everything.providerId);
    const empty = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
        params: { path: { provider_deployment_id: ev.id } },
      }),
    );
    expect(empty.schema).toEqual(EMPTY_CONFIG_SCHEMA);

    const r = await deploy("Rich", rich.providerId);
    const richSchema = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
        params: { path: { provider_deployment_id: r.id } },
      }),
    );
    expect(richSchema).toEqual({
      object: "provider.config_schema",
      provider_id: rich.providerId,
      provider_version_id: rich.versions["1.0.0"],
      schema: RICH_CONFIG_SCHEMA,
    });
  });
});

describe("provider configs: create", () => {
  it("creates an inline config validated against the schema, stores it encrypted and never returns the data", async () => {
    const d = await deploy("GitHub inline", github.providerId);
    const res = await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: d.id } },
      body: {
        name: "Repos and issues",
        description: "Two toolsets",
        metadata: { env: "staging" },
        config: { type: "inline", data: { toolsets: "repos,issues" } },
      },
    });
    expect(res.response.status).toBe(201);
    const created = res.data;
    if (!created) throw new Error("no body");
    expect(created).toEqual({
      object: "provider.config",
      id: expect.stringMatching(/^pcf_[0-9a-z]{26}$/),
      name: "Repos and issues",
      description: "Two toolsets",
      metadata: { env: "staging" },
      provider_id: github.providerId,
      provider_deployment_id: d.id,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);
    expect(JSON.stringify(created)).not.toContain("repos,issues");

    const fetched = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: { provider_deployment_id: d.id, provider_config_id: created.id } },
      }),
    );
    expect(fetched).toEqual(created);

    const { row, data } = await storedConfig(created.id);
    expect(row).toMatchObject({
      instance_id: t.tenant.instanceId,
      provider_id: github.providerId,
      provider_deployment_id: d.id,
      provider_version_id: github.currentVersionId,
      source: "inline",
    });
    expect(row.data_ciphertext).toMatch(/^v1\.test\./);
    expect(row.data_ciphertext).not.toContain("repos,issues");
    expect(data).toEqual({ toolsets: "repos,issues" });
    // The ciphertext is bound to its row: it does not decrypt as another config's.
    expect(() => t.secrets.decrypt(row.data_ciphertext, configAad("pcf_other"))).toThrow();
  });

  it("accepts data that satisfies required fields, nested objects and formats, and empty data where nothing is required", async () => {
    const r = await deploy("Rich", rich.providerId);
    const full = await createInline(r.id, "Full", richConfigData("sk-full-12345678"));
    expect((await storedConfig(full.id)).data).toEqual(richConfigData("sk-full-12345678"));
    const minimal = await createInline(r.id, "Minimal", { api_key: "12345678", workspace: "w" });
    expect(minimal.provider_deployment_id).toBe(r.id);

    const ev = await deploy("Everything", everything.providerId);
    const none = await createInline(ev.id, "Nothing to configure", {});
    expect((await storedConfig(none.id)).data).toEqual({});
    const gh = await deploy("GitHub", github.providerId);
    const defaults = await createInline(gh.id, "Defaults", {});
    expect(defaults.description).toBeNull();
    expect(defaults.metadata).toBeNull();
  });

  it("creates a config from a vault of the same deployment, copying the vault's data", async () => {
    const r = await deploy("Rich vaulted", rich.providerId);
    const vault = await createVault(r.id, "Credentials", richConfigData("sk-vault-87654321"));
    const config = await createFromVault(r.id, "From vault", vault.id);
    expect(config).toEqual({
      object: "provider.config",
      id: expect.stringMatching(/^pcf_/),
      name: "From vault",
      description: null,
      metadata: null,
      provider_id: rich.providerId,
      provider_deployment_id: r.id,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const { row, data } = await storedConfig(config.id);
    expect(row.source).toBe("vault");
    expect(data).toEqual(richConfigData("sk-vault-87654321"));
    // Its own ciphertext, not the vault's.
    const vaultRow = await t.db
      .selectFrom("provider_config_vaults")
      .select("data_ciphertext")
      .where("id", "=", vault.id)
      .executeTakeFirstOrThrow();
    expect(row.data_ciphertext).not.toBe(vaultRow.data_ciphertext);
    expect(t.secrets.decryptJson(vaultRow.data_ciphertext, vaultAad(vault.id))).toEqual(data);
  });

  it("creates a config from a vault of another deployment of the same provider", async () => {
    const a = await deploy("GitHub A", github.providerId);
    const b = await deploy("GitHub B", github.providerId);
    const vault = await createVault(a.id, "Shared toolsets", { toolsets: "pull_requests" });
    const config = await createFromVault(b.id, "Borrowed", vault.id);
    expect(config).toMatchObject({ provider_deployment_id: b.id, provider_id: github.providerId });
    expect((await storedConfig(config.id)).data).toEqual({ toolsets: "pull_requests" });
    // It is B's config, not A's.
    const aConfigs = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: a.id } },
      }),
    );
    expect(aConfigs.items).toEqual([]);
  });

  it("validates against the deployment's pinned version, not the provider's current one", async () => {
    const provider = await loadTestProvider(t.db, "pinned-configs", {
      versions: [
        {
          version: "1.0.0",
          status: "deprecated",
          config_schema: { ...EMPTY_CONFIG_SCHEMA, properties: { old: { type: "string" } } },
        },
        { version: "2.0.0", config_schema: RICH_CONFIG_SCHEMA },
      ],
    });
    const pinned = await deploy("Pinned", provider.providerId, {
      locked_provider_version_id: provider.versions["1.0.0"],
    });
    const config = await createInline(pinned.id, "Old shape", { old: "yes" });
    expect((await storedConfig(config.id)).row.provider_version_id).toBe(provider.versions["1.0.0"]);
  });
});

describe("provider configs: list, update, delete", () => {
  it("lists a deployment's configs only, with pagination and without data", async () => {
    const d = await deploy("Many configs", github.providerId);
    const sibling = await deploy("Sibling", github.providerId);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await createInline(d.id, `Config ${i}`, { toolsets: `secret-toolset-${i}` })).id);
    await createInline(sibling.id, "Not listed", {});
    const path = { provider_deployment_id: d.id };
    const list = (query: Record<string, unknown>) =>
      unwrap(
        t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
          params: { path, query: query as never },
        }),
      );

    const all = await list({});
    expect(all.items.map((c) => c.id)).toEqual(ids);
    expect(all.items[0]).toMatchObject({ object: "provider.config", name: "Config 0", provider_deployment_id: d.id });
    expect(all.pagination).toEqual({
      has_more_before: false,
      has_more_after: false,
      next_cursor: null,
      previous_cursor: null,
    });
    expect(JSON.stringify(all)).not.toContain("secret-toolset");

    const first = await list({ limit: 2 });
    expect(first.items.map((c) => c.id)).toEqual(ids.slice(0, 2));
    const second = await list({ limit: 2, cursor: first.pagination.next_cursor ?? "" });
    expect(second.items.map((c) => c.id)).toEqual(ids.slice(2, 4));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });
    const back = await list({ limit: 2, cursor: second.pagination.previous_cursor ?? "" });
    expect(back.items.map((c) => c.id)).toEqual(ids.slice(0, 2));
    expect((await list({ after: ids[3] })).items.map((c) => c.id)).toEqual([ids[4]]);
    expect((await list({ before: ids[1] })).items.map((c) => c.id)).toEqual([ids[0]]);
    expect((await list({ order: "desc", limit: 3 })).items.map((c) => c.id)).toEqual([ids[4], ids[3], ids[2]]);

    const walked: string[] = [];
    for await (const c of t.client.paginate("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path, query: { limit: 2 } },
    })) {
      walked.push(c.id);
    }
    expect(walked).toEqual(ids);

    const empty = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: (await deploy("No configs", github.providerId)).id } },
      }),
    );
    expect(empty.items).toEqual([]);
  });

  it("updates name, description and metadata; null clears; the data stays as it was", async () => {
    const d = await deploy("Updating", github.providerId);
    const created = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: d.id } },
        body: {
          name: "Before",
          description: "Old",
          metadata: { a: 1 },
          config: { type: "inline", data: { toolsets: "repos" } },
        },
      }),
    );
    const before = await storedConfig(created.id);
    const path = { provider_deployment_id: d.id, provider_config_id: created.id };
    const patch = (body: Record<string, unknown>) =>
      unwrap(
        t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
          body,
        }),
      );

    const renamed = await patch({ name: "After" });
    expect(renamed).toEqual({ ...created, name: "After", updated_at: expect.stringMatching(ISO) });
    expect(renamed.updated_at >= created.updated_at).toBe(true);
    expect(await patch({ description: "New", metadata: { b: [true] } })).toMatchObject({
      name: "After",
      description: "New",
      metadata: { b: [true] },
    });
    const cleared = await patch({ description: null, metadata: null });
    expect(cleared).toMatchObject({ name: "After", description: null, metadata: null, created_at: created.created_at });
    expect(await patch({})).toMatchObject({ name: "After", description: null, metadata: null });

    const after = await storedConfig(created.id);
    expect(after.row.data_ciphertext).toBe(before.row.data_ciphertext);
    expect(after.data).toEqual({ toolsets: "repos" });
    expect(
      await unwrap(
        t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
        }),
      ),
    ).toMatchObject({ name: "After", description: null, metadata: null });
  });

  it("deletes a config and returns it; the row and its encrypted data are gone", async () => {
    const d = await deploy("Deleting", github.providerId);
    const keep = await createInline(d.id, "Keep", {});
    const config = await createInline(d.id, "Delete me", { toolsets: "x" });
    const path = { provider_deployment_id: d.id, provider_config_id: config.id };
    const res = await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
      params: { path },
    });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(config);
    expect(await t.db.selectFrom("provider_configs").select("id").where("id", "=", config.id).execute()).toEqual([]);
    const get = await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
      params: { path },
    });
    expect(get.response.status).toBe(404);
    const list = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: d.id } },
      }),
    );
    expect(list.items.map((c) => c.id)).toEqual([keep.id]);
  });

  it("deleting a config that other deployments use as default leaves them without a default config", async () => {
    const owner = await deploy("Owner", github.providerId);
    const config = await createInline(owner.id, "Shared default", { toolsets: "repos" });
    const users = [
      await deploy("User 1", github.providerId, { config: { type: "reference", provider_config_id: config.id } }),
      await deploy("User 2", github.providerId, { config: { type: "reference", provider_config_id: config.id } }),
    ];
    for (const u of users) expect(u.default_config?.id).toBe(config.id);

    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: { provider_deployment_id: owner.id, provider_config_id: config.id } },
      }),
    );
    for (const u of users) {
      const now = await unwrap(
        t.client.GET("/provider-deployments/{provider_deployment_id}", {
          params: { path: { provider_deployment_id: u.id } },
        }),
      );
      expect(now).toMatchObject({ id: u.id, status: "active", default_config: null });
      const row = await t.db
        .selectFrom("provider_deployments")
        .select("default_config_id")
        .where("id", "=", u.id)
        .executeTakeFirstOrThrow();
      expect(row.default_config_id).toBeNull();
    }
    // With the config gone, the owner can be deleted too.
    const deleted = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: owner.id } },
    });
    expect(deleted.response.status).toBe(200);
  });

  it("keeps reading, renaming and deleting configs of a deployment that can no longer run", async () => {
    const provider = await loadTestProvider(t.db, "fading", { versions: [{ version: "1.0.0" }] });
    const d = await deploy("Fading", provider.providerId);
    const config = await createInline(d.id, "Made while active", {});
    await t.db
      .updateTable("providers")
      .set({ current_version_id: null })
      .where("id", "=", provider.providerId)
      .execute();
    const path = { provider_deployment_id: d.id, provider_config_id: config.id };
    expect(
      (await unwrap(t.client.GET("/provider-deployments/{provider_deployment_id}/configs", { params: { path } })))
        .items,
    ).toEqual([config]);
    expect(
      (
        await unwrap(
          t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
            params: { path },
            body: { name: "Renamed" },
          }),
        )
      ).name,
    ).toBe("Renamed");
    expect(
      (
        await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
        })
      ).response.status,
    ).toBe(200);
  });
});

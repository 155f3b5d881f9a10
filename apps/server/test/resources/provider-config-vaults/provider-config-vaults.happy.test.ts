import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { configAad, vaultAad } from "../../../src/resources/provider-configs/service.ts";
import {
  catalogProvider,
  loadTestProvider,
  RICH_CONFIG_SCHEMA,
  richConfigData,
  startCustomServer,
} from "../../support/catalog-fixtures.ts";
import { createVault as createVaultAs, deploy as deployAs } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();
const everything = fixture(() => catalogProvider(t.db, "everything"));
const github = fixture(() => catalogProvider(t.db, "github"));

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const deploy = (name: string, providerId: string, extra: Record<string, unknown> = {}) =>
  deployAs(t.client, providerId, name, extra);

const createVault = (deploymentId: string, name: string, data: Record<string, unknown>) =>
  createVaultAs(t.client, deploymentId, name, data);

async function storedVault(id: string) {
  const row = await t.db
    .selectFrom("provider_config_vaults")
    .selectAll()
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  return { row, data: t.secrets.decryptJson<Record<string, unknown>>(row.data_ciphertext, vaultAad(id)) };
}

describe("provider config vaults: happy paths", () => {
  it("creates a vault, stores its data encrypted and never returns it", async () => {
    const d = await deploy("GitHub", github.providerId);
    const data = {
      toolsets: "repos",
      nested: { token: "ghp_secret_value", list: [1, "two", null] },
      unicode: "日本語 ✓",
    };
    const res = await t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
      params: { path: { provider_deployment_id: d.id } },
      body: { name: "Staging credentials", description: "Shared", metadata: { env: "staging" }, data },
    });
    expect(res.response.status).toBe(201);
    const created = res.data;
    if (!created) throw new Error("no body");
    expect(created).toEqual({
      object: "provider.config_vault",
      id: expect.stringMatching(/^pcvt_[0-9a-z]{26}$/),
      name: "Staging credentials",
      description: "Shared",
      metadata: { env: "staging" },
      provider_id: github.providerId,
      provider_deployment_id: d.id,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);
    expect(JSON.stringify(created)).not.toContain("ghp_secret_value");

    const fetched = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: { provider_deployment_id: d.id, provider_config_vault_id: created.id } },
      }),
    );
    expect(fetched).toEqual(created);

    const stored = await storedVault(created.id);
    expect(stored.row).toMatchObject({
      instance_id: t.tenant.instanceId,
      provider_id: github.providerId,
      provider_deployment_id: d.id,
    });
    expect(stored.row.data_ciphertext).toMatch(/^v1\.test\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(stored.row.data_ciphertext).not.toContain("ghp_secret_value");
    expect(stored.data).toEqual(data);
    // Bound to its row: not readable as another vault's or as a config's.
    expect(() => t.secrets.decrypt(stored.row.data_ciphertext, vaultAad("pcvt_other"))).toThrow();
    expect(() => t.secrets.decrypt(stored.row.data_ciphertext, configAad(created.id))).toThrow();
  });

  it("does not validate vault data against a config schema when it is stored", async () => {
    const ev = await deploy("Everything", everything.providerId);
    // `everything` takes no configuration at all, yet a vault can hold anything.
    const vault = await createVault(ev.id, "Arbitrary", { anything: [1, 2, 3], deep: { er: { est: true } } });
    expect((await storedVault(vault.id)).data).toEqual({ anything: [1, 2, 3], deep: { er: { est: true } } });
    expect((await createVault(ev.id, "Empty", {})).name).toBe("Empty");

    // Even under a deployment that cannot run (there is no schema to check against).
    const bare = await seedCatalogProvider(t.db, "Versionless");
    const inactive = await deploy("Inactive", bare.providerId);
    expect(inactive.status).toBe("inactive");
    expect((await createVault(inactive.id, "Still stored", { k: "v" })).provider_deployment_id).toBe(inactive.id);
  });

  it("accepts data of exactly 64 KiB when the body limit allows it", async () => {
    const big = await startCustomServer({ bodyLimitBytes: 1024 * 1024 });
    try {
      const gh = await catalogProvider(big.db, "github");
      const d = await unwrap(
        big.client.POST("/provider-deployments", { body: { name: "Big", provider_id: gh.providerId } }),
      );
      const data = { blob: "x".repeat(65536 - 11) };
      expect(Buffer.byteLength(JSON.stringify(data))).toBe(65536);
      const res = await big.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: { provider_deployment_id: d.id } },
        body: { name: "64 KiB", data },
      });
      expect(res.response.status).toBe(201);
      const row = await big.db
        .selectFrom("provider_config_vaults")
        .select("data_ciphertext")
        .where("id", "=", res.data?.id ?? "")
        .executeTakeFirstOrThrow();
      expect(big.secrets.decryptJson(row.data_ciphertext, vaultAad(res.data?.id ?? ""))).toEqual(data);
    } finally {
      await big.close();
    }
  });

  it("lists a deployment's vaults only, with pagination and without data", async () => {
    const d = await deploy("Many vaults", github.providerId);
    const sibling = await deploy("Sibling", github.providerId);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createVault(d.id, `Vault ${i}`, { toolsets: `vault-secret-${i}` })).id);
    await createVault(sibling.id, "Not listed", {});
    const path = { provider_deployment_id: d.id };
    const list = (query: Record<string, unknown>) =>
      unwrap(
        t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults", {
          params: { path, query: query as never },
        }),
      );

    const all = await list({});
    expect(all.items.map((v) => v.id)).toEqual(ids);
    expect(all.items[2]).toMatchObject({
      object: "provider.config_vault",
      name: "Vault 2",
      provider_deployment_id: d.id,
    });
    expect(all.pagination).toEqual({
      has_more_before: false,
      has_more_after: false,
      next_cursor: null,
      previous_cursor: null,
    });
    expect(JSON.stringify(all)).not.toContain("vault-secret");

    const first = await list({ limit: 2 });
    expect(first.items.map((v) => v.id)).toEqual(ids.slice(0, 2));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true });
    const second = await list({ limit: 2, cursor: first.pagination.next_cursor ?? "" });
    expect(second.items.map((v) => v.id)).toEqual(ids.slice(2, 4));
    const back = await list({ limit: 2, cursor: second.pagination.previous_cursor ?? "" });
    expect(back.items.map((v) => v.id)).toEqual(ids.slice(0, 2));
    expect((await list({ after: ids[2] })).items.map((v) => v.id)).toEqual(ids.slice(3));
    expect((await list({ before: ids[2], limit: 1 })).items.map((v) => v.id)).toEqual([ids[1]]);
    expect((await list({ order: "desc" })).items.map((v) => v.id)).toEqual([...ids].reverse());
    const walked: string[] = [];
    for await (const v of t.client.paginate("/provider-deployments/{provider_deployment_id}/config-vaults", {
      params: { path, query: { limit: 3 } },
    })) {
      walked.push(v.id);
    }
    expect(walked).toEqual(ids);
  });

  it("updates name, description and metadata; null clears; the data stays as it was", async () => {
    const d = await deploy("Updating", github.providerId);
    const created = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: { provider_deployment_id: d.id } },
        body: { name: "Before", description: "Old", metadata: { a: 1 }, data: { toolsets: "repos" } },
      }),
    );
    const before = await storedVault(created.id);
    const path = { provider_deployment_id: d.id, provider_config_vault_id: created.id };
    const patch = (body: Record<string, unknown>) =>
      unwrap(
        t.client.PATCH("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
          params: { path },
          body,
        }),
      );
    const renamed = await patch({ name: "After" });
    expect(renamed).toEqual({ ...created, name: "After", updated_at: expect.stringMatching(ISO) });
    expect(renamed.updated_at >= created.updated_at).toBe(true);
    expect(await patch({ metadata: { b: 2 }, description: "New" })).toMatchObject({
      metadata: { b: 2 },
      description: "New",
    });
    expect(await patch({ description: null, metadata: null })).toMatchObject({
      name: "After",
      description: null,
      metadata: null,
    });
    expect(await patch({})).toMatchObject({
      name: "After",
      description: null,
      metadata: null,
      created_at: created.created_at,
    });
    const after = await storedVault(created.id);
    expect(after.row.data_ciphertext).toBe(before.row.data_ciphertext);
    expect(after.data).toEqual({ toolsets: "repos" });
  });

  it("deletes a vault and returns it, leaving the configs made from it intact and usable", async () => {
    const rich = await loadTestProvider(t.db, "rich-vaults", {
      versions: [{ version: "1", config_schema: RICH_CONFIG_SCHEMA }],
    });
    const a = await deploy("A", rich.providerId);
    const b = await deploy("B", rich.providerId);
    const vault = await createVault(a.id, "Source", richConfigData("sk-vaulted-1234"));
    const configs = [];
    for (const [d, name] of [
      [a, "From vault in A"],
      [b, "From vault in B"],
    ] as const) {
      configs.push(
        await unwrap(
          t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
            params: { path: { provider_deployment_id: d.id } },
            body: { name, config: { type: "vault", provider_config_vault_id: vault.id } },
          }),
        ),
      );
    }
    const user = await deploy("Uses the config", rich.providerId, {
      config: { type: "reference", provider_config_id: configs[1]?.id },
    });

    const path = { provider_deployment_id: a.id, provider_config_vault_id: vault.id };
    const res = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
      {
        params: { path },
      },
    );
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(vault);
    expect(await t.db.selectFrom("provider_config_vaults").select("id").where("id", "=", vault.id).execute()).toEqual(
      [],
    );
    const get = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
      {
        params: { path },
      },
    );
    expect(get.response.status).toBe(404);

    for (const c of configs) {
      const row = await t.db
        .selectFrom("provider_configs")
        .selectAll()
        .where("id", "=", c.id)
        .executeTakeFirstOrThrow();
      expect(t.secrets.decryptJson(row.data_ciphertext, configAad(c.id))).toEqual(richConfigData("sk-vaulted-1234"));
      const fetched = await unwrap(
        t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path: { provider_deployment_id: c.provider_deployment_id ?? "", provider_config_id: c.id } },
        }),
      );
      expect(fetched).toEqual(c);
    }
    expect(
      (
        await unwrap(
          t.client.GET("/provider-deployments/{provider_deployment_id}", {
            params: { path: { provider_deployment_id: user.id } },
          }),
        )
      ).default_config?.id,
    ).toBe(configs[1]?.id);
    // A new deployment can still take one of them as its default.
    const later = await deploy("Later", rich.providerId, {
      config: { type: "reference", provider_config_id: configs[0]?.id },
    });
    expect(later.default_config?.id).toBe(configs[0]?.id);
  });
});

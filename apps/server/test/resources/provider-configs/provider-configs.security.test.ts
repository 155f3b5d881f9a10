import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { createInlineConfig, createVault, deploy } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  crudOperations,
  expectCrossTenantNotFound,
  expectSameAsUnknown,
  expectUnauthorizedEverywhere,
  json,
  type Operation,
  snapshotTables,
} from "../../support/security.ts";
import type { Tenant } from "../../support/server.ts";

const t = useTestServer();
const github = fixture(() => catalogProvider(t.db, "github"));
const other = fixture(() => t.createTenant("other"));

const secretValue = () => `sk-live-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;

const createConfig = (client: Tenant["client"], deploymentId: string, name: string, toolsets: string) =>
  createInlineConfig(client, deploymentId, name, { toolsets });

const allRows = () => snapshotTables(t.db, ["provider_deployments", "provider_configs", "provider_config_vaults"]);

describe("provider configs: security", () => {
  it("refuses every config operation without a valid key with 401, and writes nothing", async () => {
    const d = await deploy(t.client, github.providerId, "Guarded");
    const c = await createConfig(t.client, d.id, "Guarded config", "repos");
    const base = `/provider-deployments/${d.id}`;
    await expectUnauthorizedEverywhere(
      t,
      [
        [`${base}/config-schema`, { method: "GET" }],
        ...crudOperations(
          `${base}/configs`,
          `${base}/configs/${c.id}`,
          { name: "Sneaky", config: { type: "inline", data: {} } },
          { name: "Hijacked" },
        ),
      ],
      allRows,
    );
  });

  it("answers 404 on every config path under another instance's deployment", async () => {
    const theirs = await deploy(other.client, github.providerId, "Theirs");
    const theirConfig = await createConfig(other.client, theirs.id, "Their config", "secret-toolset");
    const item = { provider_deployment_id: theirs.id, provider_config_id: theirConfig.id };
    const base = `/provider-deployments/${theirs.id}`;
    const attempts: Operation[] = [
      [`${base}/config-schema`, { method: "GET" }],
      ...crudOperations(
        `${base}/configs`,
        `${base}/configs/${theirConfig.id}`,
        { name: "Planted", config: { type: "inline", data: {} } },
        { name: "Renamed by a stranger" },
      ),
    ];
    await expectCrossTenantNotFound(t, {
      attempts,
      entity: "provider.deployment",
      hidden: ["secret-toolset"],
      unchanged: allRows,
    });
    expect(
      await unwrap(
        other.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path: item },
        }),
      ),
    ).toEqual(theirConfig);
  });

  it("answers 404 for another instance's config id under my own deployment", async () => {
    const mine = await deploy(t.client, github.providerId, "Mine");
    const theirs = await deploy(other.client, github.providerId, "Theirs");
    const theirConfig = await createConfig(other.client, theirs.id, "Their config", "repos");
    const path = { provider_deployment_id: mine.id, provider_config_id: theirConfig.id };
    const attempts = async () => [
      await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path },
      }),
      await t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path },
        body: { name: "Taken", description: null, metadata: null },
      }),
      await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path },
      }),
    ];
    const unknownId = "pcf_00000000000000000000000000";
    const unknown = await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
      params: { path: { provider_deployment_id: mine.id, provider_config_id: unknownId } },
    });
    const answers = await expectCrossTenantNotFound(t, { attempts, entity: "provider.config", unchanged: allRows });
    for (const r of answers) expectSameAsUnknown(r, theirConfig.id, unknown, unknownId);
    const myList = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: mine.id } },
      }),
    );
    expect(myList.items).toEqual([]);
    // A bound taken from their id reveals nothing either.
    const bounded = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: mine.id }, query: { before: theirConfig.id } },
      }),
    );
    expect(bounded.items).toEqual([]);
  });

  it("answers 404 when creating a config from another instance's vault, even of the same provider", async () => {
    const mine = await deploy(t.client, github.providerId, "Mine");
    const theirs = await deploy(other.client, github.providerId, "Theirs");
    const secret = secretValue();
    const theirVault = await createVault(other.client, theirs.id, "Their vault", { toolsets: secret });
    await expectCrossTenantNotFound(t, {
      attempts: async () => [
        await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
          params: { path: { provider_deployment_id: mine.id } },
          body: { name: "Stolen", config: { type: "vault", provider_config_vault_id: theirVault.id } },
        }),
      ],
      entity: "provider.config_vault",
      hidden: [secret],
      unchanged: allRows,
    });
  });

  it("never returns config data, from any operation", async () => {
    const d = await deploy(t.client, github.providerId, "Write-only");
    const secret = secretValue();
    const vaultSecret = secretValue();
    const base = `/provider-deployments/${d.id}`;
    const bodies: string[] = [];
    const record = async (res: Response) => {
      expect(res.status).toBeLessThan(300);
      bodies.push(await res.text());
      return JSON.parse(bodies[bodies.length - 1] ?? "null") as { id: string };
    };
    const created = await record(
      await t.fetch(
        `${base}/configs`,
        json("POST", { name: "Secretive", config: { type: "inline", data: { toolsets: secret } } }),
      ),
    );
    const vault = await record(
      await t.fetch(`${base}/config-vaults`, json("POST", { name: "Vault", data: { toolsets: vaultSecret } })),
    );
    const fromVault = await record(
      await t.fetch(
        `${base}/configs`,
        json("POST", { name: "From vault", config: { type: "vault", provider_config_vault_id: vault.id } }),
      ),
    );
    const user = await record(
      await t.fetch(
        "/provider-deployments",
        json("POST", {
          name: "User",
          provider_id: github.providerId,
          config: { type: "reference", provider_config_id: created.id },
        }),
      ),
    );
    await record(await t.fetch(`${base}/configs`));
    await record(await t.fetch(`${base}/configs/${created.id}`));
    await record(await t.fetch(`${base}/configs/${fromVault.id}`));
    await record(await t.fetch(`${base}/config-vaults/${vault.id}`));
    await record(await t.fetch(`${base}/config-vaults`));
    await record(await t.fetch(`${base}/configs/${created.id}`, json("PATCH", { description: "still secret" })));
    await record(await t.fetch(`/provider-deployments/${user.id}`));
    await record(await t.fetch("/provider-deployments?limit=100"));
    await record(await t.fetch(`/provider-deployments/${user.id}`, { method: "DELETE" }));
    await record(await t.fetch(`${base}/configs/${fromVault.id}`, { method: "DELETE" }));
    await record(await t.fetch(`${base}/config-vaults/${vault.id}`, { method: "DELETE" }));
    expect(bodies).toHaveLength(15);
    for (const body of bodies) {
      expect(body).not.toContain(secret);
      expect(body).not.toContain(vaultSecret);
      expect(body).not.toMatch(/"data"|data_ciphertext|"v1\.test/);
    }
  });
});

import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { createVault, deploy } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  crudOperations,
  expectCrossTenantNotFound,
  expectUnauthorizedEverywhere,
  itemOperations,
  json,
  type Operation,
  snapshotTables,
} from "../../support/security.ts";

const t = useTestServer();
const github = fixture(() => catalogProvider(t.db, "github"));
const other = fixture(() => t.createTenant("other"));

const allRows = () => snapshotTables(t.db, ["provider_deployments", "provider_configs", "provider_config_vaults"]);

describe("provider config vaults: security", () => {
  it("refuses every vault operation without a valid key with 401, and writes nothing", async () => {
    const d = await deploy(t.client, github.providerId, "Guarded");
    const v = await createVault(t.client, d.id, "Guarded vault", { toolsets: "repos" });
    const base = `/provider-deployments/${d.id}/config-vaults`;
    const operations = crudOperations(
      base,
      `${base}/${v.id}`,
      { name: "Sneaky", data: { a: 1 } },
      { name: "Hijacked" },
    );
    await expectUnauthorizedEverywhere(t, operations, allRows);
  });

  it("answers 404 on every vault path under another instance's deployment", async () => {
    const theirs = await deploy(other.client, github.providerId, "Theirs");
    const theirVault = await createVault(other.client, theirs.id, "Their vault", { toolsets: "their-secret" });
    const item = { provider_deployment_id: theirs.id, provider_config_vault_id: theirVault.id };
    const base = `/provider-deployments/${theirs.id}/config-vaults`;
    const attempts = crudOperations(
      base,
      `${base}/${theirVault.id}`,
      { name: "Planted", data: { toolsets: "planted" } },
      { name: "Renamed by a stranger" },
    );
    await expectCrossTenantNotFound(t, {
      attempts,
      entity: "provider.deployment",
      hidden: ["their-secret"],
      unchanged: allRows,
    });
    expect(
      await unwrap(
        other.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
          params: { path: item },
        }),
      ),
    ).toEqual(theirVault);
  });

  it("answers 404 for another instance's vault id under my own deployment, and for making a config from it", async () => {
    const mine = await deploy(t.client, github.providerId, "Mine");
    const theirs = await deploy(other.client, github.providerId, "Theirs");
    const theirVault = await createVault(other.client, theirs.id, "Their vault", { toolsets: "repos" });
    const attempts: Operation[] = [
      ...itemOperations(`/provider-deployments/${mine.id}/config-vaults/${theirVault.id}`, {
        name: "Taken",
        metadata: null,
      }),
      [
        `/provider-deployments/${mine.id}/configs`,
        json("POST", { name: "Copied", config: { type: "vault", provider_config_vault_id: theirVault.id } }),
      ],
    ];
    await expectCrossTenantNotFound(t, { attempts, entity: "provider.config_vault", unchanged: allRows });
    const mineList = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: { provider_deployment_id: mine.id }, query: { limit: 100 } },
      }),
    );
    expect(mineList.items).toEqual([]);
  });

  it("keeps a vault's data to the instance that stored it", async () => {
    const mine = await deploy(t.client, github.providerId, "Mine");
    const vault = await createVault(t.client, mine.id, "Mine", { toolsets: "mine" });
    // The other tenant's own deployment of the same provider cannot read it through a config.
    const theirs = await deploy(other.client, github.providerId, "Theirs");
    const res = await other.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: theirs.id } },
      body: { name: "Exfiltrate", config: { type: "vault", provider_config_vault_id: vault.id } },
    });
    expect(res.response.status).toBe(404);
    const theirConfigs = await t.db
      .selectFrom("provider_configs")
      .select("id")
      .where("instance_id", "=", other.instanceId)
      .execute();
    expect(theirConfigs).toEqual([]);
  });
});

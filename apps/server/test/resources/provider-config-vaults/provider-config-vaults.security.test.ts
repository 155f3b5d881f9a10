import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogProvider, type LoadedProvider } from "../../support/catalog-fixtures.ts";
import { startTestServer, type Tenant, type TestServer } from "../../support/server.ts";

let t: TestServer;
let github: LoadedProvider;
let other: Tenant;
beforeAll(async () => {
  t = await startTestServer();
  github = await catalogProvider(t.db, "github");
  other = await t.createTenant("other");
});
afterAll(() => t.close());

const json = (method: string, body: unknown) => ({
  method,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

async function deploy(client: Tenant["client"], name: string) {
  return unwrap(client.POST("/provider-deployments", { body: { name, provider_id: github.providerId } }));
}

async function createVault(
  client: Tenant["client"],
  deploymentId: string,
  name: string,
  data: Record<string, unknown>,
) {
  return unwrap(
    client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, data },
    }),
  );
}

async function allRows() {
  return {
    deployments: await t.db.selectFrom("provider_deployments").selectAll().orderBy("id").execute(),
    configs: await t.db.selectFrom("provider_configs").selectAll().orderBy("id").execute(),
    vaults: await t.db.selectFrom("provider_config_vaults").selectAll().orderBy("id").execute(),
  };
}

describe("provider config vaults: security", () => {
  it("refuses every vault operation without a valid key with 401, and writes nothing", async () => {
    const d = await deploy(t.client, "Guarded");
    const v = await createVault(t.client, d.id, "Guarded vault", { toolsets: "repos" });
    const before = await allRows();
    const base = `/provider-deployments/${d.id}/config-vaults`;
    const operations: [string, RequestInit][] = [
      [base, { method: "GET" }],
      [base, json("POST", { name: "Sneaky", data: { a: 1 } })],
      [`${base}/${v.id}`, { method: "GET" }],
      [`${base}/${v.id}`, json("PATCH", { name: "Hijacked" })],
      [`${base}/${v.id}`, { method: "DELETE" }],
    ];
    for (const [path, init] of operations) {
      for (const authorization of [undefined, "Bearer", "Bearer nope", `Bearer tp_aaaaaaaaaaaa_${"A".repeat(43)}`]) {
        const headers = new Headers(init.headers);
        if (authorization) headers.set("authorization", authorization);
        const res = await t.fetch(path, { ...init, headers, auth: false });
        const label = `${init.method} ${path} ${authorization ?? "(none)"}`;
        expect(res.status, label).toBe(401);
        expect(await res.json(), label).toMatchObject({ code: "unauthorized", status: 401 });
      }
    }
    expect(await allRows()).toEqual(before);
  });

  it("answers 404 on every vault path under another instance's deployment", async () => {
    const theirs = await deploy(other.client, "Theirs");
    const theirVault = await createVault(other.client, theirs.id, "Their vault", { toolsets: "their-secret" });
    const before = await allRows();
    const dep = { provider_deployment_id: theirs.id };
    const item = { ...dep, provider_config_vault_id: theirVault.id };
    const results = [
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults", { params: { path: dep } }),
      await t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: dep },
        body: { name: "Planted", data: { toolsets: "planted" } },
      }),
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
      await t.client.PATCH("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
        body: { name: "Renamed by a stranger" },
      }),
      await t.client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
    ];
    for (const r of results) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.deployment" });
      expect(JSON.stringify(r.error)).not.toContain("their-secret");
    }
    expect(await allRows()).toEqual(before);
    expect(
      await unwrap(
        other.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
          params: { path: item },
        }),
      ),
    ).toEqual(theirVault);
  });

  it("answers 404 for another instance's vault id under my own deployment, and for making a config from it", async () => {
    const mine = await deploy(t.client, "Mine");
    const theirs = await deploy(other.client, "Theirs");
    const theirVault = await createVault(other.client, theirs.id, "Their vault", { toolsets: "repos" });
    const before = await allRows();
    const path = { provider_deployment_id: mine.id, provider_config_vault_id: theirVault.id };
    const results = [
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path },
      }),
      await t.client.PATCH("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path },
        body: { name: "Taken", metadata: null },
      }),
      await t.client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path },
      }),
      await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: mine.id } },
        body: { name: "Copied", config: { type: "vault", provider_config_vault_id: theirVault.id } },
      }),
    ];
    for (const r of results) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.config_vault" });
    }
    expect(await allRows()).toEqual(before);
    const mineList = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: { provider_deployment_id: mine.id }, query: { limit: 100 } },
      }),
    );
    expect(mineList.items).toEqual([]);
  });

  it("keeps a vault's data to the instance that stored it", async () => {
    const mine = await deploy(t.client, "Mine");
    const vault = await createVault(t.client, mine.id, "Mine", { toolsets: "mine" });
    // The other tenant's own deployment of the same provider cannot read it through a config.
    const theirs = await deploy(other.client, "Theirs");
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

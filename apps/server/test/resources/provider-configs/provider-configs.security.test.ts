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

const secretValue = () => `sk-live-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;

async function deploy(client: Tenant["client"], name: string) {
  return unwrap(client.POST("/provider-deployments", { body: { name, provider_id: github.providerId } }));
}

async function createConfig(client: Tenant["client"], deploymentId: string, name: string, toolsets: string) {
  return unwrap(
    client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, config: { type: "inline", data: { toolsets } } },
    }),
  );
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

describe("provider configs: security", () => {
  it("refuses every config operation without a valid key with 401, and writes nothing", async () => {
    const d = await deploy(t.client, "Guarded");
    const c = await createConfig(t.client, d.id, "Guarded config", "repos");
    const before = await allRows();
    const base = `/provider-deployments/${d.id}`;
    const operations: [string, RequestInit][] = [
      [`${base}/configs`, { method: "GET" }],
      [`${base}/configs`, json("POST", { name: "Sneaky", config: { type: "inline", data: {} } })],
      [`${base}/config-schema`, { method: "GET" }],
      [`${base}/configs/${c.id}`, { method: "GET" }],
      [`${base}/configs/${c.id}`, json("PATCH", { name: "Hijacked" })],
      [`${base}/configs/${c.id}`, { method: "DELETE" }],
    ];
    for (const [path, init] of operations) {
      for (const authorization of [
        undefined,
        "Bearer nope",
        `Bearer tp_aaaaaaaaaaaa_${"A".repeat(43)}`,
        `Basic ${t.tenant.apiKey}`,
      ]) {
        const headers = new Headers(init.headers);
        if (authorization) headers.set("authorization", authorization);
        const res = await t.fetch(path, { ...init, headers, auth: false });
        const label = `${init.method} ${path} ${authorization?.slice(0, 12) ?? "(none)"}`;
        expect(res.status, label).toBe(401);
        expect(await res.json(), label).toMatchObject({ code: "unauthorized", status: 401 });
      }
    }
    expect(await allRows()).toEqual(before);
  });

  it("answers 404 on every config path under another instance's deployment", async () => {
    const theirs = await deploy(other.client, "Theirs");
    const theirConfig = await createConfig(other.client, theirs.id, "Their config", "secret-toolset");
    const before = await allRows();
    const dep = { provider_deployment_id: theirs.id };
    const item = { ...dep, provider_config_id: theirConfig.id };
    const results = [
      await t.client.GET("/provider-deployments/{provider_deployment_id}/configs", { params: { path: dep } }),
      await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: dep },
        body: { name: "Planted", config: { type: "inline", data: {} } },
      }),
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", { params: { path: dep } }),
      await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
      await t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
        body: { name: "Renamed by a stranger" },
      }),
      await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
    ];
    for (const r of results) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.deployment" });
      expect(JSON.stringify(r.error)).not.toContain("secret-toolset");
    }
    expect(await allRows()).toEqual(before);
    expect(
      await unwrap(
        other.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path: item },
        }),
      ),
    ).toEqual(theirConfig);
  });

  it("answers 404 for another instance's config id under my own deployment", async () => {
    const mine = await deploy(t.client, "Mine");
    const theirs = await deploy(other.client, "Theirs");
    const theirConfig = await createConfig(other.client, theirs.id, "Their config", "repos");
    const before = await allRows();
    const path = { provider_deployment_id: mine.id, provider_config_id: theirConfig.id };
    const results = [
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
    const unknown = await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
      params: { path: { provider_deployment_id: mine.id, provider_config_id: "pcf_00000000000000000000000000" } },
    });
    for (const r of results) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.config" });
      expect(r.error?.message.replace(theirConfig.id, "ID")).toBe(
        unknown.error?.message.replace("pcf_00000000000000000000000000", "ID"),
      );
    }
    expect(await allRows()).toEqual(before);
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
    const mine = await deploy(t.client, "Mine");
    const theirs = await deploy(other.client, "Theirs");
    const secret = secretValue();
    const theirVault = await createVault(other.client, theirs.id, "Their vault", { toolsets: secret });
    const before = await allRows();
    const res = await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: mine.id } },
      body: { name: "Stolen", config: { type: "vault", provider_config_vault_id: theirVault.id } },
    });
    expect(res.response.status).toBe(404);
    expect(res.error).toMatchObject({ code: "not_found", entity: "provider.config_vault" });
    expect(JSON.stringify(res.error)).not.toContain(secret);
    expect(await allRows()).toEqual(before);
  });

  it("never returns config data, from any operation", async () => {
    const d = await deploy(t.client, "Write-only");
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

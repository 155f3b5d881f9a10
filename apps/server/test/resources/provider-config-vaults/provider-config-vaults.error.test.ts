import { type ErrorBody, unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CustomTestServer, catalogProvider, startCustomServer } from "../../support/catalog-fixtures.ts";
import { deploy as deployAs } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { expectBadBodiesRefused, json } from "../../support/security.ts";
import type { TestServer } from "../../support/server.ts";

const t = useTestServer();
const github = fixture(() => catalogProvider(t.db, "github"));

const UNKNOWN_DEPLOYMENT = "pde_00000000000000000000000000";
const UNKNOWN_VAULT = "pcvt_00000000000000000000000000";

async function vaultRows(server: TestServer = t) {
  return server.db.selectFrom("provider_config_vaults").selectAll().orderBy("id").execute();
}

const deploy = (name: string, server: TestServer = t, providerId = github.providerId) =>
  deployAs(server.client, providerId, name);

const postVault = (deploymentId: string, body: unknown, server: TestServer = t) =>
  server.fetch(`/provider-deployments/${deploymentId}/config-vaults`, json("POST", body));

describe("provider config vaults: errors", () => {
  it("rejects invalid create bodies with field paths and stores nothing", async () => {
    const d = await deploy("Vaults");
    const before = await vaultRows();
    const cases: [unknown, (string | number)[], string][] = [
      [{ data: {} }, ["name"], "required"],
      [{ name: "x" }, ["data"], "required"],
      [{ name: "", data: {} }, ["name"], "min_length"],
      [{ name: "n".repeat(256), data: {} }, ["name"], "max_length"],
      [{ name: null, data: {} }, ["name"], "type"],
      [{ name: "x", data: null }, ["data"], "type"],
      [{ name: "x", data: [] }, ["data"], "type"],
      [{ name: "x", data: "api_key=sk" }, ["data"], "type"],
      [{ name: "x", data: 1 }, ["data"], "type"],
      [{ name: "x", data: {}, description: 3 }, ["description"], "type"],
      [{ name: "x", data: {}, description: "d".repeat(10_001) }, ["description"], "max_length"],
      [{ name: "x", data: {}, metadata: null }, ["metadata"], "type"],
      [
        { name: "x", data: {}, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
        ["metadata"],
        "max_properties",
      ],
      [{ name: "x", data: {}, config: { type: "inline", data: {} } }, ["config"], "additional_property"],
      [{ name: "x", data: {}, provider_deployment_id: d.id }, ["provider_deployment_id"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const res = await postVault(d.id, payload);
      const label = JSON.stringify(payload).slice(0, 100);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    }
    await expectBadBodiesRefused(t, `/provider-deployments/${d.id}/config-vaults`, {
      name: "x",
      data: { blob: "x".repeat(70 * 1024) },
    });
    expect(await vaultRows()).toEqual(before);
  });

  it("never echoes vault data in a validation error", async () => {
    const d = await deploy("Echo");
    const secret = `sk-live-${Math.random().toString(36).slice(2)}`;
    const res = await postVault(d.id, { name: "", data: { api_key: secret }, extra: secret });
    expect(res.status).toBe(400);
    expect(await res.text()).not.toContain(secret);
  });

  it("rejects invalid update bodies, including any attempt to change the data, and changes nothing", async () => {
    const d = await deploy("Strict");
    const vault = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: { provider_deployment_id: d.id } },
        body: { name: "Strict", description: "keep", data: { toolsets: "repos" } },
      }),
    );
    const before = await vaultRows();
    const cases: [unknown, (string | number)[]][] = [
      [{ name: "" }, ["name"]],
      [{ name: null }, ["name"]],
      [{ description: false }, ["description"]],
      [{ metadata: 1 }, ["metadata"]],
      [{ data: { toolsets: "issues" } }, ["data"]],
      [{ data: null }, ["data"]],
    ];
    for (const [payload, path] of cases) {
      const res = await t.fetch(`/provider-deployments/${d.id}/config-vaults/${vault.id}`, json("PATCH", payload));
      const label = JSON.stringify(payload);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    }
    expect((await t.fetch(`/provider-deployments/${d.id}/config-vaults/${vault.id}`, { method: "PATCH" })).status).toBe(
      400,
    );
    expect(await vaultRows()).toEqual(before);
  });

  it("answers 404 for an unknown deployment on every vault route", async () => {
    const before = await vaultRows();
    const dep = { provider_deployment_id: UNKNOWN_DEPLOYMENT };
    const item = { ...dep, provider_config_vault_id: UNKNOWN_VAULT };
    const results = [
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults", { params: { path: dep } }),
      await t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: dep },
        body: { name: "x", data: { a: 1 } },
      }),
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
      await t.client.PATCH("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
        body: { name: "x" },
      }),
      await t.client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
    ];
    for (const r of results) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.deployment" });
    }
    expect(await vaultRows()).toEqual(before);
  });

  it("answers 404 for an unknown vault, a vault of another deployment, and a deleted vault", async () => {
    const a = await deploy("A");
    const b = await deploy("B");
    const ofB = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: { provider_deployment_id: b.id } },
        body: { name: "B's vault", data: { toolsets: "b" } },
      }),
    );
    const before = await vaultRows();
    for (const vaultId of [UNKNOWN_VAULT, ofB.id]) {
      const path = { provider_deployment_id: a.id, provider_config_vault_id: vaultId };
      const results = [
        await t.client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
          params: { path },
        }),
        await t.client.PATCH(
          "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
          {
            params: { path },
            body: { name: "Moved" },
          },
        ),
        await t.client.DELETE(
          "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
          {
            params: { path },
          },
        ),
      ];
      for (const r of results) {
        expect(r.response.status, vaultId).toBe(404);
        expect(r.error, vaultId).toMatchObject({ code: "not_found", entity: "provider.config_vault" });
        expect(r.error?.message).toContain(vaultId);
      }
    }
    expect(await vaultRows()).toEqual(before);
    const path = { provider_deployment_id: b.id, provider_config_vault_id: ofB.id };
    const first = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
      {
        params: { path },
      },
    );
    expect(first.response.status).toBe(200);
    const second = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
      {
        params: { path },
      },
    );
    expect(second.response.status).toBe(404);
    const patch = await t.client.PATCH(
      "/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}",
      {
        params: { path },
        body: { name: "Back" },
      },
    );
    expect(patch.response.status).toBe(404);
  });

  it("validates list query parameters and answers wrong methods with 405", async () => {
    const d = await deploy("Query");
    for (const [query, code] of [
      ["limit=0", "invalid_data"],
      ["limit=x", "invalid_data"],
      ["order=random", "invalid_data"],
      ["provider_id=pro_x", "invalid_data"],
      ["before=a&after=b", "bad_request"],
      ["cursor=bm9wZQ", "bad_request"],
    ] as const) {
      const res = await t.fetch(`/provider-deployments/${d.id}/config-vaults?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
    const collection = await t.fetch(`/provider-deployments/${d.id}/config-vaults`, { method: "PATCH" });
    expect(collection.status).toBe(405);
    expect(collection.headers.get("allow")).toBe("GET, POST");
    const item = await t.fetch(`/provider-deployments/${d.id}/config-vaults/${UNKNOWN_VAULT}`, { method: "POST" });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "GET", "PATCH"]);
  });

  it("refuses metadata over the documented 16 KiB", async () => {
    const d = await deploy("Metadata");
    const before = await vaultRows();
    const res = await postVault(d.id, { name: "Big metadata", metadata: { blob: "m".repeat(20 * 1024) }, data: {} });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: "invalid_data",
      errors: [expect.objectContaining({ path: ["metadata"] })],
    });
    expect(await vaultRows()).toEqual(before);
  });

  it("answers a name or metadata with a NUL character with a 400, not a 500", async () => {
    const d = await deploy("NUL");
    const before = await vaultRows();
    const statuses: number[] = [];
    for (const payload of [
      { name: "nul\u0000name", data: {} },
      { name: "ok", metadata: { k: "nul\u0000" }, data: {} },
    ]) {
      statuses.push((await postVault(d.id, payload)).status);
    }
    expect(statuses).toEqual([400, 400]);
    expect(await vaultRows()).toEqual(before);
  });
});

describe("provider config vaults: data size limit", () => {
  let big: CustomTestServer;
  beforeAll(async () => {
    big = await startCustomServer({ bodyLimitBytes: 1024 * 1024 });
  });
  afterAll(() => big.close());

  it("refuses data over 64 KiB with 400 at data, counting bytes, and stores nothing", async () => {
    const gh = await catalogProvider(big.db, "github");
    const d = await deploy("Big", big, gh.providerId);
    const before = await vaultRows(big);
    for (const data of [
      { blob: "x".repeat(65537 - 11) },
      { blob: "é".repeat((65537 - 11) / 2) },
      { blob: "x".repeat(500_000) },
    ]) {
      expect(Buffer.byteLength(JSON.stringify(data))).toBeGreaterThan(65536);
      const res = await postVault(d.id, { name: "Too much", data }, big);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: "invalid_data",
        entity: "body",
        errors: [{ code: "max_size", path: ["data"], message: expect.stringContaining("65536") }],
      });
    }
    expect(await vaultRows(big)).toEqual(before);
  });

  it("answers 413 when the whole body is over the server's body limit", async () => {
    const d = await deploy("Small limit");
    const before = await vaultRows();
    const res = await postVault(d.id, { name: "Too big", data: { blob: "x".repeat(65536) } });
    expect(res.status).toBe(413);
    expect(await vaultRows()).toEqual(before);
  });
});

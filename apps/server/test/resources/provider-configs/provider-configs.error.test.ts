import { type ErrorBody, unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CustomTestServer,
  catalogProvider,
  countRows,
  type LoadedProvider,
  loadTestProvider,
  RICH_CONFIG_SCHEMA,
  setVersionStatus,
  startCustomServer,
} from "../../support/catalog-fixtures.ts";
import { createVault as createVaultAs, deploy as deployAs } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json } from "../../support/security.ts";
import { seedCatalogProvider } from "../../support/seed.ts";
import type { TestServer } from "../../support/server.ts";

const t = useTestServer();
const everything = fixture(() => catalogProvider(t.db, "everything"));
const github = fixture(() => catalogProvider(t.db, "github"));
const rich = fixture(() =>
  loadTestProvider(t.db, "rich-errors", {
    versions: [{ version: "1.0.0", config_schema: RICH_CONFIG_SCHEMA }],
  }),
);

const UNKNOWN_DEPLOYMENT = "pde_00000000000000000000000000";
const UNKNOWN_CONFIG = "pcf_00000000000000000000000000";
const UNKNOWN_VAULT = "pcvt_00000000000000000000000000";

async function configRows(server: TestServer = t) {
  return server.db.selectFrom("provider_configs").selectAll().orderBy("id").execute();
}

const deploy = (name: string, providerId: string, extra: Record<string, unknown> = {}, server: TestServer = t) =>
  deployAs(server.client, providerId, name, extra);

const createVault = (deploymentId: string, name: string, data: Record<string, unknown>) =>
  createVaultAs(t.client, deploymentId, name, data);

const postConfig = (deploymentId: string, body: unknown, server: TestServer = t) =>
  server.fetch(`/provider-deployments/${deploymentId}/configs`, json("POST", body));

describe("provider configs: inline data that does not match the config schema", () => {
  it("lists every violation with its path under config.data, and stores nothing", async () => {
    const d = await deploy("Rich", rich.providerId);
    const before = await configRows();
    const res = await postConfig(d.id, {
      name: "Everything wrong",
      config: {
        type: "inline",
        data: {
          toolsets: "not in this schema",
          workspace: "Upper Case",
          endpoint: "not a uri",
          contact: "not-an-email",
          region: "asia",
          limits: { max_calls: 0, window: "one minute", extra: 1 },
          tags: [1, "a", "b", "c"],
        },
      },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body).toMatchObject({ __typename: "error", ok: false, status: 400, code: "invalid_data", entity: "body" });
    const found = (body.errors ?? []).map((e) => [e.path, e.code]);
    const expected: [(string | number)[], string][] = [
      [["config", "data", "api_key"], "required"],
      [["config", "data", "toolsets"], "additional_property"],
      [["config", "data", "workspace"], "pattern"],
      [["config", "data", "endpoint"], "format"],
      [["config", "data", "contact"], "format"],
      [["config", "data", "region"], "enum"],
      [["config", "data", "limits", "max_calls"], "minimum"],
      [["config", "data", "limits", "window"], "format"],
      [["config", "data", "limits", "extra"], "additional_property"],
      [["config", "data", "tags"], "max_items"],
      [["config", "data", "tags", 0], "type"],
    ];
    for (const e of expected) expect(found, JSON.stringify(e)).toContainEqual(e);
    expect(found).toHaveLength(expected.length);
    for (const e of body.errors ?? []) expect(typeof e.message).toBe("string");
    expect(body.message).toMatch(/config\.data/);
    expect(body.message).toContain(`(and ${expected.length - 1} more)`);
    expect(await configRows()).toEqual(before);
  });

  it("reports the catalog schema's violations: wrong types, unknown and missing fields", async () => {
    const gh = await deploy("GitHub", github.providerId);
    const before = await configRows();
    const cases: [Record<string, unknown>, [(string | number)[], string][]][] = [
      [{ toolsets: 1 }, [[["config", "data", "toolsets"], "type"]]],
      [{ toolsets: ["repos"] }, [[["config", "data", "toolsets"], "type"]]],
      [{ toolsets: null }, [[["config", "data", "toolsets"], "type"]]],
      [
        { toolsets: true, token: "ghp_x" },
        [
          [["config", "data", "toolsets"], "type"],
          [["config", "data", "token"], "additional_property"],
        ],
      ],
    ];
    for (const [data, errors] of cases) {
      const res = await postConfig(gh.id, { name: "Bad", config: { type: "inline", data } });
      const label = JSON.stringify(data);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(
        (body.errors ?? []).map((e) => [e.path, e.code]),
        label,
      ).toEqual(expect.arrayContaining(errors));
      expect(body.errors, label).toHaveLength(errors.length);
    }

    const r = await deploy("Rich", rich.providerId);
    const missing = await postConfig(r.id, { name: "Empty", config: { type: "inline", data: {} } });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as ErrorBody).errors).toEqual([
      { code: "required", message: "is required", path: ["config", "data", "api_key"] },
      { code: "required", message: "is required", path: ["config", "data", "workspace"] },
    ]);
    const nested = await postConfig(r.id, {
      name: "Nested",
      config: { type: "inline", data: { api_key: "12345678", workspace: "w", limits: {} } },
    });
    expect(((await nested.json()) as ErrorBody).errors).toEqual([
      expect.objectContaining({ code: "required", path: ["config", "data", "limits", "max_calls"] }),
    ]);

    const ev = await deploy("Everything", everything.providerId);
    const extra = await postConfig(ev.id, { name: "Extra", config: { type: "inline", data: { anything: 1 } } });
    expect(((await extra.json()) as ErrorBody).errors).toEqual([
      expect.objectContaining({ code: "additional_property", path: ["config", "data", "anything"] }),
    ]);
    expect(await configRows()).toEqual(before);
  });

  it("does not echo the rejected values back", async () => {
    const r = await deploy("Rich", rich.providerId);
    const secret = `sk-live-${Math.random().toString(36).slice(2)}`;
    const res = await postConfig(r.id, {
      name: "Echo",
      config: { type: "inline", data: { api_key: 123, workspace: `Bad ${secret}`, contact: secret, region: secret } },
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).not.toContain(secret);
    expect(text).toContain("workspace");
  });
});

describe("provider configs: configs from vaults", () => {
  it("refuses a vault of another provider's deployment with 400 at config.provider_config_vault_id", async () => {
    const gh = await deploy("GitHub", github.providerId);
    const ev = await deploy("Everything", everything.providerId);
    const evVault = await createVault(ev.id, "Everything's vault", {});
    const before = await configRows();
    const res = await postConfig(gh.id, {
      name: "Cross provider",
      config: { type: "vault", provider_config_vault_id: evVault.id },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: "invalid_data",
      entity: "body",
      errors: [expect.objectContaining({ path: ["config", "provider_config_vault_id"] })],
    });
    expect(await configRows()).toEqual(before);
  });

  it("refuses a vault whose data fails the schema: entity provider.config_vault, paths inside the vault data", async () => {
    const r = await deploy("Rich", rich.providerId);
    const secret = `sk-live-${Math.random().toString(36).slice(2)}`;
    const vault = await createVault(r.id, "Bad vault", {
      api_key: 42,
      workspace: `Not Valid ${secret}`,
      limits: { max_calls: "many" },
      leaked: secret,
    });
    const before = await configRows();
    const res = await postConfig(r.id, {
      name: "From bad vault",
      config: { type: "vault", provider_config_vault_id: vault.id },
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).not.toContain(secret);
    const body = JSON.parse(text) as ErrorBody;
    expect(body).toMatchObject({ code: "invalid_data", status: 400, entity: "provider.config_vault" });
    expect(body.message).toContain(vault.id);
    expect((body.errors ?? []).map((e) => [e.path, e.code])).toEqual(
      expect.arrayContaining([
        [["api_key"], "type"],
        [["workspace"], "pattern"],
        [["limits", "max_calls"], "type"],
        [["leaked"], "additional_property"],
      ]),
    );
    expect(body.errors).toHaveLength(4);
    expect(await configRows()).toEqual(before);
  });

  it("validates vault data against the target deployment's version, not the vault's", async () => {
    const provider = await loadTestProvider(t.db, "two-schemas", {
      versions: [
        {
          version: "1.0.0",
          status: "deprecated",
          config_schema: {
            type: "object",
            properties: { old: { type: "string" } },
            required: ["old"],
            additionalProperties: false,
          },
        },
        { version: "2.0.0", config_schema: RICH_CONFIG_SCHEMA },
      ],
    });
    const onV1 = await deploy("On 1.0.0", provider.providerId, {
      locked_provider_version_id: provider.versions["1.0.0"],
    });
    const onV2 = await deploy("On 2.0.0", provider.providerId);
    const vault = await createVault(onV1.id, "Old-shaped", { old: "value" });
    // Fine for the deployment it was made under…
    expect(
      (await postConfig(onV1.id, { name: "ok", config: { type: "vault", provider_config_vault_id: vault.id } })).status,
    ).toBe(201);
    // …but not for the other deployment of the same provider, which runs another schema.
    const before = await configRows();
    const res = await postConfig(onV2.id, {
      name: "no",
      config: { type: "vault", provider_config_vault_id: vault.id },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body.entity).toBe("provider.config_vault");
    expect((body.errors ?? []).map((e) => e.path)).toEqual(
      expect.arrayContaining([["api_key"], ["workspace"], ["old"]]),
    );
    expect(await configRows()).toEqual(before);
  });

  it("answers an unknown or deleted vault with 404", async () => {
    const gh = await deploy("GitHub", github.providerId);
    const vault = await createVault(gh.id, "Short-lived", { toolsets: "repos" });
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: { provider_deployment_id: gh.id, provider_config_vault_id: vault.id } },
      }),
    );
    const before = await configRows();
    for (const vaultId of [UNKNOWN_VAULT, vault.id, "pcf_notavault"]) {
      const res = await postConfig(gh.id, {
        name: "Ghost",
        config: { type: "vault", provider_config_vault_id: vaultId },
      });
      expect(res.status, vaultId).toBe(404);
      expect(await res.json(), vaultId).toMatchObject({ code: "not_found", entity: "provider.config_vault" });
    }
    expect(await configRows()).toEqual(before);
  });
});

describe("provider configs: deployments without a runnable version", () => {
  it("answers config-schema and create with 409 when the provider has no current version, storing nothing", async () => {
    const bare = await seedCatalogProvider(t.db, "Without versions");
    const d = await deploy("Cannot run", bare.providerId);
    expect(d.status).toBe("inactive");
    const schema = await t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
      params: { path: { provider_deployment_id: d.id } },
    });
    expect(schema.response.status).toBe(409);
    expect(schema.error).toMatchObject({ code: "conflict", status: 409, entity: "provider.deployment" });
    expect(schema.error?.message).toContain(d.id);

    const vault = await createVault(d.id, "Vault under an inactive deployment", {});
    const before = await configRows();
    for (const config of [
      { type: "inline", data: {} },
      { type: "vault", provider_config_vault_id: vault.id },
    ]) {
      const res = await postConfig(d.id, { name: "Refused", config });
      expect(res.status, config.type).toBe(409);
      expect(await res.json()).toMatchObject({ code: "conflict", entity: "provider.deployment" });
    }
    expect(await configRows()).toEqual(before);
    // Listing still works.
    const list = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: d.id } },
      }),
    );
    expect(list.items).toEqual([]);
  });

  it("answers 409 when the pinned version is failed or pending, and again 200 once it is released", async () => {
    const provider = await loadTestProvider(t.db, "unstable", {
      versions: [{ version: "1.0.0" }, { version: "2.0.0" }],
    });
    const v1 = provider.versions["1.0.0"] ?? "";
    const pinned = await deploy("Pinned", provider.providerId, { locked_provider_version_id: v1 });
    const unpinned = await deploy("Unpinned", provider.providerId);
    const path = { provider_deployment_id: pinned.id };
    for (const status of ["failed", "pending"]) {
      await setVersionStatus(t.db, v1, status);
      const res = await t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
        params: { path },
      });
      expect(res.response.status, status).toBe(409);
      expect(res.error?.message, status).toContain(status);
      expect((await postConfig(pinned.id, { name: "x", config: { type: "inline", data: {} } })).status, status).toBe(
        409,
      );
      // The unpinned deployment runs 2.0.0 and is not affected.
      expect((await postConfig(unpinned.id, { name: "x", config: { type: "inline", data: {} } })).status, status).toBe(
        201,
      );
    }
    await setVersionStatus(t.db, v1, "released");
    const ok = await t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", { params: { path } });
    expect(ok.response.status).toBe(200);
    expect(ok.data?.provider_version_id).toBe(v1);
  });
});

describe("provider configs: data size limit", () => {
  let big: CustomTestServer;
  let openProvider: LoadedProvider;
  beforeAll(async () => {
    // The production body limit is 1 MiB, so the 64 KiB data limit is what applies there.
    big = await startCustomServer({ bodyLimitBytes: 1024 * 1024 });
    openProvider = await loadTestProvider(big.db, "open-schema", {
      versions: [{ version: "1", config_schema: { type: "object" } }],
    });
  });
  afterAll(() => big.close());

  /** `{"blob":"…"}` of exactly `bytes` bytes of JSON. */
  const blob = (bytes: number, char = "x") => ({ blob: char.repeat((bytes - 11) / Buffer.byteLength(char)) });

  it("accepts inline data of exactly 64 KiB and refuses one byte more with 400 at config.data", async () => {
    const d = await deploy("Open", openProvider.providerId, {}, big);
    expect(Buffer.byteLength(JSON.stringify(blob(65536)))).toBe(65536);
    const exact = await postConfig(
      d.id,
      { name: "Exactly 64 KiB", config: { type: "inline", data: blob(65536) } },
      big,
    );
    expect(exact.status).toBe(201);

    const before = await configRows(big);
    const over = await postConfig(d.id, { name: "One byte more", config: { type: "inline", data: blob(65537) } }, big);
    expect(over.status).toBe(400);
    expect(await over.json()).toMatchObject({
      code: "invalid_data",
      entity: "body",
      errors: [{ code: "max_size", path: ["config", "data"], message: expect.stringContaining("65536") }],
    });
    // Bytes count, not characters: 32,763 two-byte characters are 65,537 bytes.
    const wide = blob(65537, "é");
    expect(wide.blob.length).toBeLessThan(65536);
    const multibyte = await postConfig(d.id, { name: "Wide", config: { type: "inline", data: wide } }, big);
    expect(multibyte.status).toBe(400);
    expect(((await multibyte.json()) as ErrorBody).errors?.[0]?.code).toBe("max_size");
    expect(await configRows(big)).toEqual(before);
  });

  it("checks the size before the schema, so an oversized body is not validated field by field", async () => {
    const gh = await catalogProvider(big.db, "github");
    const d = await deploy("GitHub", gh.providerId, {}, big);
    const res = await postConfig(d.id, { name: "Huge and wrong", config: { type: "inline", data: blob(70_000) } }, big);
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorBody).errors).toEqual([expect.objectContaining({ code: "max_size" })]);
  });

  it("answers 413 when the whole body is over the server's body limit", async () => {
    const d = await deploy("GitHub small limit", github.providerId);
    const before = await configRows();
    const res = await postConfig(d.id, { name: "Too big", config: { type: "inline", data: blob(65536) } });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: "payload_too_large" });
    expect(await configRows()).toEqual(before);
  });
});

describe("provider configs: invalid requests", () => {
  it("rejects invalid create bodies with field paths and stores nothing", async () => {
    const d = await deploy("GitHub", github.providerId);
    const before = await configRows();
    const inline = { type: "inline", data: {} };
    const cases: [unknown, (string | number)[], string][] = [
      [{ config: inline }, ["name"], "required"],
      [{ name: "x" }, ["config"], "required"],
      [{ name: "", config: inline }, ["name"], "min_length"],
      [{ name: "n".repeat(256), config: inline }, ["name"], "max_length"],
      [{ name: "x", description: 1, config: inline }, ["description"], "type"],
      [{ name: "x", description: null, config: inline }, ["description"], "type"],
      [{ name: "x", metadata: [], config: inline }, ["metadata"], "type"],
      [{ name: "x", config: { type: "inline" } }, ["config", "data"], "required"],
      [{ name: "x", config: { type: "inline", data: [] } }, ["config", "data"], "type"],
      [{ name: "x", config: { type: "inline", data: "toolsets=repos" } }, ["config", "data"], "type"],
      [{ name: "x", config: { type: "inline", data: null } }, ["config", "data"], "type"],
      [{ name: "x", config: { type: "vault" } }, ["config", "provider_config_vault_id"], "required"],
      [
        { name: "x", config: { type: "vault", provider_config_vault_id: "" } },
        ["config", "provider_config_vault_id"],
        "min_length",
      ],
      [
        { name: "x", config: { type: "vault", provider_config_vault_id: "v".repeat(65) } },
        ["config", "provider_config_vault_id"],
        "max_length",
      ],
      [{ name: "x", config: { type: "reference", provider_config_id: "pcf_x" } }, ["config", "type"], "enum"],
      [{ name: "x", config: { type: "inline", data: {}, extra: 1 } }, ["config", "extra"], "additional_property"],
      [{ name: "x", config: {} }, ["config", "type"], "required"],
      [{ name: "x", config: "inline" }, ["config"], "type"],
      [{ name: "x", config: inline, data: {} }, ["data"], "additional_property"],
      [{ name: "x", config: inline, provider_deployment_id: d.id }, ["provider_deployment_id"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const res = await postConfig(d.id, payload);
      const label = JSON.stringify(payload).slice(0, 100);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    }
    expect((await postConfig(d.id, "{")).status).toBe(400);
    expect((await t.fetch(`/provider-deployments/${d.id}/configs`, { method: "POST" })).status).toBe(400);
    const text = await t.fetch(`/provider-deployments/${d.id}/configs`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ name: "x", config: inline }),
    });
    expect(text.status).toBe(415);
    expect(await configRows()).toEqual(before);
  });

  it("rejects invalid update bodies, including any attempt to change the data, and changes nothing", async () => {
    const d = await deploy("GitHub", github.providerId);
    const config = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: d.id } },
        body: {
          name: "Strict",
          description: "keep",
          metadata: { keep: 1 },
          config: { type: "inline", data: { toolsets: "repos" } },
        },
      }),
    );
    const before = await configRows();
    const cases: [unknown, (string | number)[]][] = [
      [{ name: "" }, ["name"]],
      [{ name: null }, ["name"]],
      [{ description: 5 }, ["description"]],
      [{ description: "d".repeat(10_001) }, ["description"]],
      [{ metadata: "m" }, ["metadata"]],
      [{ config: { type: "inline", data: { toolsets: "issues" } } }, ["config"]],
      [{ data: { toolsets: "issues" } }, ["data"]],
      [{ provider_deployment_id: UNKNOWN_DEPLOYMENT }, ["provider_deployment_id"]],
    ];
    for (const [payload, path] of cases) {
      const res = await t.fetch(`/provider-deployments/${d.id}/configs/${config.id}`, json("PATCH", payload));
      const label = JSON.stringify(payload);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    }
    expect(await configRows()).toEqual(before);
  });

  it("answers 404 for an unknown deployment on every config route", async () => {
    const before = await configRows();
    const dep = { provider_deployment_id: UNKNOWN_DEPLOYMENT };
    const item = { ...dep, provider_config_id: UNKNOWN_CONFIG };
    const results = [
      await t.client.GET("/provider-deployments/{provider_deployment_id}/configs", { params: { path: dep } }),
      await t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: dep },
        body: { name: "x", config: { type: "inline", data: {} } },
      }),
      await t.client.GET("/provider-deployments/{provider_deployment_id}/config-schema", { params: { path: dep } }),
      await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
      await t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
        body: { name: "x" },
      }),
      await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
    ];
    for (const r of results) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.deployment" });
      expect(r.error?.message).toContain(UNKNOWN_DEPLOYMENT);
    }
    expect(await configRows()).toEqual(before);
  });

  it("answers 404 for an unknown config, and for a config of another deployment, on get, patch and delete", async () => {
    const a = await deploy("A", github.providerId);
    const b = await deploy("B", github.providerId);
    const ofB = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: b.id } },
        body: { name: "B's config", config: { type: "inline", data: {} } },
      }),
    );
    const before = await configRows();
    for (const configId of [UNKNOWN_CONFIG, ofB.id]) {
      const path = { provider_deployment_id: a.id, provider_config_id: configId };
      const results = [
        await t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
        }),
        await t.client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
          body: { name: "Moved" },
        }),
        await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
        }),
      ];
      for (const r of results) {
        expect(r.response.status, configId).toBe(404);
        expect(r.error, configId).toMatchObject({ code: "not_found", entity: "provider.config" });
        expect(r.error?.message).toContain(configId);
      }
    }
    expect(await configRows()).toEqual(before);
    // A deleted config is unknown, including for a second delete.
    const path = { provider_deployment_id: b.id, provider_config_id: ofB.id };
    expect(
      (
        await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
        })
      ).response.status,
    ).toBe(200);
    expect(
      (
        await t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
          params: { path },
        })
      ).response.status,
    ).toBe(404);
    expect(await countRows(t.db, "provider_configs", { column: "provider_deployment_id", value: b.id })).toBe(0);
  });

  it("validates list query parameters and answers wrong methods with 405", async () => {
    const d = await deploy("Query", github.providerId);
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["order=up", "invalid_data"],
      ["search=x", "invalid_data"],
      ["status=active", "invalid_data"],
      ["after=pcf_a&before=pcf_b", "bad_request"],
      ["cursor=%%%", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/provider-deployments/${d.id}/configs?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
    const collection = await t.fetch(`/provider-deployments/${d.id}/configs`, { method: "DELETE" });
    expect(collection.status).toBe(405);
    expect(collection.headers.get("allow")).toBe("GET, POST");
    const item = await t.fetch(`/provider-deployments/${d.id}/configs/${UNKNOWN_CONFIG}`, { method: "PUT" });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "GET", "PATCH"]);
    const schema = await t.fetch(`/provider-deployments/${d.id}/config-schema`, { method: "POST" });
    expect(schema.status).toBe(405);
    expect(schema.headers.get("allow")).toBe("GET");
  });

  it("refuses metadata over the documented 16 KiB", async () => {
    const d = await deploy("GitHub", github.providerId);
    const before = await configRows();
    const res = await postConfig(d.id, {
      name: "Big metadata",
      metadata: { blob: "m".repeat(20 * 1024) },
      config: { type: "inline", data: {} },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: "invalid_data",
      errors: [expect.objectContaining({ path: ["metadata"] })],
    });
    expect(await configRows()).toEqual(before);
  });

  it("answers a name or metadata with a NUL character with a 400, not a 500", async () => {
    const d = await deploy("GitHub", github.providerId);
    const before = await configRows();
    const payloads = [
      { name: "nul\u0000name", config: { type: "inline", data: {} } },
      { name: "ok", metadata: { k: "nul\u0000" }, config: { type: "inline", data: {} } },
    ];
    const statuses: number[] = [];
    for (const payload of payloads) statuses.push((await postConfig(d.id, payload)).status);
    expect(statuses).toEqual([400, 400]);
    expect(await configRows()).toEqual(before);
    // In the (encrypted) data it is just a character.
    const inData = await postConfig(d.id, { name: "ok", config: { type: "inline", data: { toolsets: "a\u0000b" } } });
    expect(inData.status).toBe(201);
  });
});

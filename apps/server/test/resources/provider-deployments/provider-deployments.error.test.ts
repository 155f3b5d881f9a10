import { type ErrorBody, unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogProvider, countRows, type LoadedProvider, loadTestProvider } from "../../support/catalog-fixtures.ts";
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

const UNKNOWN = "pde_00000000000000000000000000";

const send = (method: string, body: unknown) => ({
  method,
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** Every deployment, config and vault row: a failed request must leave all of them as they were. */
async function snapshot() {
  return {
    deployments: await t.db.selectFrom("provider_deployments").selectAll().orderBy("id").execute(),
    configs: await t.db.selectFrom("provider_configs").selectAll().orderBy("id").execute(),
    vaults: await t.db.selectFrom("provider_config_vaults").selectAll().orderBy("id").execute(),
  };
}

async function deploy(name: string, providerId: string) {
  return unwrap(t.client.POST("/provider-deployments", { body: { name, provider_id: providerId } }));
}

async function createConfig(deploymentId: string, name: string) {
  return unwrap(
    t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, config: { type: "inline", data: {} } },
    }),
  );
}

describe("provider deployments: errors on create", () => {
  it("answers an unknown provider with 404 and creates nothing", async () => {
    const before = await snapshot();
    const res = await t.client.POST("/provider-deployments", {
      body: { name: "Ghost", provider_id: "pro_00000000000000000000000000" },
    });
    expect(res.response.status).toBe(404);
    expect(res.error).toMatchObject({
      __typename: "error",
      ok: false,
      status: 404,
      code: "not_found",
      entity: "provider",
    });
    expect(res.error?.message).toContain("pro_00000000000000000000000000");
    // An unknown provider is reported before the version and config it names.
    const all = await t.client.POST("/provider-deployments", {
      body: {
        name: "Ghost",
        provider_id: "pro_nope",
        locked_provider_version_id: "prv_nope",
        config: { type: "reference", provider_config_id: "pcf_nope" },
      },
    });
    expect(all.response.status).toBe(404);
    expect(all.error?.entity).toBe("provider");
    // A version id is not a provider id.
    const versionAsProvider = await t.client.POST("/provider-deployments", {
      body: { name: "Mixed up", provider_id: everything.currentVersionId ?? "" },
    });
    expect(versionAsProvider.response.status).toBe(404);
    expect(await snapshot()).toEqual(before);
  });

  it("answers a version of another provider with 400 at locked_provider_version_id", async () => {
    const before = await snapshot();
    const res = await t.client.POST("/provider-deployments", {
      body: {
        name: "Wrong version",
        provider_id: github.providerId,
        locked_provider_version_id: everything.currentVersionId ?? "",
      },
    });
    expect(res.response.status).toBe(400);
    expect(res.error).toMatchObject({ code: "invalid_data", status: 400, entity: "body" });
    expect(res.error?.errors).toEqual([expect.objectContaining({ path: ["locked_provider_version_id"] })]);
    expect(res.error?.message).toContain(everything.currentVersionId ?? "");
    expect(await snapshot()).toEqual(before);
  });

  it("answers an unknown version with 404", async () => {
    const before = await snapshot();
    for (const versionId of ["prv_00000000000000000000000000", "x", everything.providerId]) {
      const res = await t.client.POST("/provider-deployments", {
        body: { name: "Unknown version", provider_id: everything.providerId, locked_provider_version_id: versionId },
      });
      expect(res.response.status, versionId).toBe(404);
      expect(res.error, versionId).toMatchObject({ code: "not_found", entity: "provider.version" });
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers a config of another provider with 400 at config, and an unknown config with 404", async () => {
    const ghDeployment = await deploy("GitHub", github.providerId);
    const ghConfig = await createConfig(ghDeployment.id, "GitHub config");
    const before = await snapshot();

    const other = await t.client.POST("/provider-deployments", {
      body: {
        name: "Borrows a GitHub config",
        provider_id: everything.providerId,
        config: { type: "reference", provider_config_id: ghConfig.id },
      },
    });
    expect(other.response.status).toBe(400);
    expect(other.error).toMatchObject({ code: "invalid_data", entity: "body" });
    expect(other.error?.errors).toHaveLength(1);
    // The contract says "at path `config`"; the server points into it, at config.provider_config_id.
    expect(other.error?.errors?.[0]?.path.slice(0, 1)).toEqual(["config"]);

    const unknown = await t.client.POST("/provider-deployments", {
      body: {
        name: "Unknown config",
        provider_id: github.providerId,
        config: { type: "reference", provider_config_id: "pcf_00000000000000000000000000" },
      },
    });
    expect(unknown.response.status).toBe(404);
    expect(unknown.error).toMatchObject({ code: "not_found", entity: "provider.config" });

    // A deleted config is unknown too.
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: { provider_deployment_id: ghDeployment.id, provider_config_id: ghConfig.id } },
      }),
    );
    const deleted = await t.client.POST("/provider-deployments", {
      body: {
        name: "Deleted config",
        provider_id: github.providerId,
        config: { type: "reference", provider_config_id: ghConfig.id },
      },
    });
    expect(deleted.response.status).toBe(404);
    const after = await snapshot();
    expect(after.deployments).toEqual(before.deployments);
  });

  it("checks the version before the config, and both against the provider", async () => {
    const provider = await loadTestProvider(t.db, "ordered", { versions: [{ version: "1" }] });
    const before = await snapshot();
    const res = await t.client.POST("/provider-deployments", {
      body: {
        name: "Both wrong",
        provider_id: provider.providerId,
        locked_provider_version_id: "prv_unknown",
        config: { type: "reference", provider_config_id: "pcf_unknown" },
      },
    });
    expect(res.response.status).toBe(404);
    expect(res.error?.entity).toBe("provider.version");
    expect(await snapshot()).toEqual(before);
  });

  it("rejects invalid bodies with field paths and writes nothing", async () => {
    const before = await snapshot();
    const res = await t.fetch(
      "/provider-deployments",
      send("POST", { name: "", provider_id: 5, description: 7, extra: true }),
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body).toMatchObject({ __typename: "error", ok: false, status: 400, code: "invalid_data", entity: "body" });
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: ["name"], code: "min_length" }),
        expect.objectContaining({ path: ["provider_id"], code: "type" }),
        expect.objectContaining({ path: ["description"], code: "type" }),
        expect.objectContaining({ path: ["extra"], code: "additional_property" }),
      ]),
    );
    expect(body.errors).toHaveLength(4);

    const p = everything.providerId;
    const cases: [unknown, (string | number)[], string][] = [
      [{ provider_id: p }, ["name"], "required"],
      [{ name: "x" }, ["provider_id"], "required"],
      [{ name: null, provider_id: p }, ["name"], "type"],
      [{ name: "n".repeat(256), provider_id: p }, ["name"], "max_length"],
      [{ name: "x", provider_id: "" }, ["provider_id"], "min_length"],
      [{ name: "x", provider_id: "p".repeat(65) }, ["provider_id"], "max_length"],
      [{ name: "x", provider_id: p, description: "d".repeat(10_001) }, ["description"], "max_length"],
      [{ name: "x", provider_id: p, description: null }, ["description"], "type"],
      [{ name: "x", provider_id: p, metadata: null }, ["metadata"], "type"],
      [{ name: "x", provider_id: p, metadata: [1] }, ["metadata"], "type"],
      [{ name: "x", provider_id: p, metadata: "m" }, ["metadata"], "type"],
      [
        { name: "x", provider_id: p, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
        ["metadata"],
        "max_properties",
      ],
      [{ name: "x", provider_id: p, locked_provider_version_id: "" }, ["locked_provider_version_id"], "min_length"],
      [{ name: "x", provider_id: p, locked_provider_version_id: 1 }, ["locked_provider_version_id"], "type"],
      [{ name: "x", provider_id: p, locked_provider_version_id: null }, ["locked_provider_version_id"], "type"],
      [{ name: "x", provider_id: p, config: { type: "reference" } }, ["config", "provider_config_id"], "required"],
      [{ name: "x", provider_id: p, config: { provider_config_id: "pcf_x" } }, ["config", "type"], "required"],
      [
        { name: "x", provider_id: p, config: { type: "reference", provider_config_id: "" } },
        ["config", "provider_config_id"],
        "min_length",
      ],
      [
        { name: "x", provider_id: p, config: { type: "inline", provider_config_id: "pcf_x" } },
        ["config", "type"],
        "enum",
      ],
      [
        { name: "x", provider_id: p, config: { type: "reference", provider_config_id: "pcf_x", data: {} } },
        ["config", "data"],
        "additional_property",
      ],
      [{ name: "x", provider_id: p, config: "pcf_x" }, ["config"], "type"],
      [{ name: "x", provider_id: p, config: null }, ["config"], "type"],
      // Fields of the response are not part of the create body.
      [{ name: "x", provider_id: p, status: "active" }, ["status"], "additional_property"],
      [{ name: "x", provider_id: p, locked_version: null }, ["locked_version"], "additional_property"],
      [{ name: "x", provider_id: p, default_config: null }, ["default_config"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const r = await t.fetch("/provider-deployments", send("POST", payload));
      const label = JSON.stringify(payload).slice(0, 100);
      expect(r.status, label).toBe(400);
      const b = (await r.json()) as ErrorBody;
      expect(b, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(b.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    }
    for (const payload of ["[]", '"deployment"', "null", "42"]) {
      const r = await t.fetch("/provider-deployments", send("POST", payload));
      expect(r.status, payload).toBe(400);
      expect(await r.json(), payload).toMatchObject({ code: "invalid_data", entity: "body" });
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers malformed JSON, wrong content type, missing and oversized bodies, and writes nothing", async () => {
    const before = await snapshot();
    const bad = await t.fetch("/provider-deployments", send("POST", '{"name":'));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "bad_request", message: "Request body is not valid JSON." });

    const text = await t.fetch("/provider-deployments", {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ name: "x", provider_id: everything.providerId }),
    });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ code: "unsupported_media_type" });

    const empty = await t.fetch("/provider-deployments", { method: "POST" });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: "invalid_data", entity: "body" });

    const huge = await t.fetch(
      "/provider-deployments",
      send("POST", { name: "x", provider_id: everything.providerId, description: "y".repeat(70 * 1024) }),
    );
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ code: "payload_too_large", status: 413 });
    expect(await snapshot()).toEqual(before);
  });

  it("refuses metadata over the documented 16 KiB, on create and update", async () => {
    // Metadata.yaml: "At most 50 keys; the whole object serialised to at most 16 KiB."
    const before = await snapshot();
    const big = { blob: "m".repeat(20 * 1024) };
    const create = await t.fetch(
      "/provider-deployments",
      send("POST", { name: "Big metadata", provider_id: everything.providerId, metadata: big }),
    );
    expect(create.status).toBe(400);
    expect(await create.json()).toMatchObject({
      code: "invalid_data",
      entity: "body",
      errors: [expect.objectContaining({ path: ["metadata"] })],
    });
    expect((await snapshot()).deployments).toEqual(before.deployments);

    const d = await deploy("Small metadata", everything.providerId);
    const update = await t.fetch(`/provider-deployments/${d.id}`, send("PATCH", { metadata: big }));
    expect(update.status).toBe(400);
    expect(
      (
        await unwrap(
          t.client.GET("/provider-deployments/{provider_deployment_id}", {
            params: { path: { provider_deployment_id: d.id } },
          }),
        )
      ).metadata,
    ).toBeNull();
  });

  it("answers text PostgreSQL cannot store (a NUL character) with a 400, not a 500", async () => {
    const before = await snapshot();
    const payloads = [
      { name: "nul\u0000name", provider_id: everything.providerId },
      { name: "ok", description: "nul\u0000description", provider_id: everything.providerId },
      { name: "ok", metadata: { key: "nul\u0000value" }, provider_id: everything.providerId },
      { name: "ok", metadata: { "nul\u0000key": 1 }, provider_id: everything.providerId },
    ];
    const answers: { payload: string; status: number; code: unknown }[] = [];
    for (const payload of payloads) {
      const res = await t.fetch("/provider-deployments", send("POST", payload));
      answers.push({
        payload: JSON.stringify(payload),
        status: res.status,
        code: ((await res.json()) as ErrorBody).code,
      });
    }
    // Every one is the client's mistake: a 400 in the documented shape, never an internal error.
    expect(answers).toEqual(payloads.map((p) => ({ payload: JSON.stringify(p), status: 400, code: "invalid_data" })));
    expect((await snapshot()).deployments).toEqual(before.deployments);
  });
});

describe("provider deployments: errors on update", () => {
  it("rejects invalid update bodies with field paths and changes nothing", async () => {
    const d = await unwrap(
      t.client.POST("/provider-deployments", {
        body: { name: "Strict", description: "keep", metadata: { keep: true }, provider_id: everything.providerId },
      }),
    );
    const cases: [unknown, (string | number)[], string][] = [
      [{ name: "" }, ["name"], "min_length"],
      [{ name: null }, ["name"], "type"],
      [{ name: "n".repeat(256) }, ["name"], "max_length"],
      [{ description: 7 }, ["description"], "type"],
      [{ description: "d".repeat(10_001) }, ["description"], "max_length"],
      [{ metadata: "x" }, ["metadata"], "one_of"],
      [
        { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
        ["metadata"],
        "max_properties",
      ],
      // The provider, the pinned version and the default config cannot be changed.
      [{ provider_id: github.providerId }, ["provider_id"], "additional_property"],
      [
        { locked_provider_version_id: everything.currentVersionId },
        ["locked_provider_version_id"],
        "additional_property",
      ],
      [{ config: { type: "reference", provider_config_id: "pcf_x" } }, ["config"], "additional_property"],
      [{ status: "inactive" }, ["status"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const res = await t.fetch(`/provider-deployments/${d.id}`, send("PATCH", payload));
      const label = JSON.stringify(payload).slice(0, 100);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
      if (code !== "one_of") {
        expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
      }
    }
    const missing = await t.fetch(`/provider-deployments/${d.id}`, { method: "PATCH" });
    expect(missing.status).toBe(400);
    const notJson = await t.fetch(`/provider-deployments/${d.id}`, send("PATCH", "{name"));
    expect(notJson.status).toBe(400);

    const unchanged = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: d.id } },
      }),
    );
    expect(unchanged).toEqual(d);
  });
});

describe("provider deployments: unknown ids, routes and query parameters", () => {
  it("answers 404 for unknown ids on get, patch and delete", async () => {
    const before = await snapshot();
    const path = { provider_deployment_id: UNKNOWN };
    const get = await t.client.GET("/provider-deployments/{provider_deployment_id}", { params: { path } });
    const patch = await t.client.PATCH("/provider-deployments/{provider_deployment_id}", {
      params: { path },
      body: { name: "x" },
    });
    const del = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } });
    for (const r of [get, patch, del]) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({
        __typename: "error",
        ok: false,
        status: 404,
        code: "not_found",
        entity: "provider.deployment",
      });
      expect(r.error?.message).toContain(UNKNOWN);
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers 404 for a deployment once it is deleted, including a second delete", async () => {
    const d = await deploy("Twice", everything.providerId);
    const path = { provider_deployment_id: d.id };
    expect(
      (await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } })).response.status,
    ).toBe(200);
    const again = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } });
    expect(again.response.status).toBe(404);
    const patch = await t.client.PATCH("/provider-deployments/{provider_deployment_id}", {
      params: { path },
      body: { name: "Back" },
    });
    expect(patch.response.status).toBe(404);
    const configs = await t.client.GET("/provider-deployments/{provider_deployment_id}/configs", { params: { path } });
    expect(configs.response.status).toBe(404);
    expect(configs.error?.entity).toBe("provider.deployment");
    expect(await countRows(t.db, "provider_deployments", { column: "instance_id", value: t.tenant.instanceId })).toBe(
      (
        await t.db
          .selectFrom("provider_deployments")
          .select("id")
          .where("instance_id", "=", t.tenant.instanceId)
          .execute()
      ).length,
    );
    expect(await t.db.selectFrom("provider_deployments").select("id").where("id", "=", d.id).execute()).toEqual([]);
  });

  it("validates list query parameters", async () => {
    const tooMany = Array.from({ length: 101 }, (_, i) => `provider_id=pro_${i}`).join("&");
    const cases: [string, string, (string | number)[] | null][] = [
      ["limit=0", "invalid_data", ["limit"]],
      ["limit=101", "invalid_data", ["limit"]],
      ["limit=abc", "invalid_data", ["limit"]],
      ["order=sideways", "invalid_data", ["order"]],
      ["status=archived", "invalid_data", ["status"]],
      ["status=", "invalid_data", ["status"]],
      ["status=active&status=inactive", "invalid_data", ["status"]],
      ["search=", "invalid_data", ["search"]],
      [`search=${"s".repeat(256)}`, "invalid_data", ["search"]],
      ["search=a&search=b", "invalid_data", ["search"]],
      ["provider_id=", "invalid_data", ["provider_id", 0]],
      [`provider_id=${"p".repeat(65)}`, "invalid_data", ["provider_id", 0]],
      [tooMany, "invalid_data", ["provider_id"]],
      ["provider_version_id=", "invalid_data", ["provider_version_id", 0]],
      ["provider_ids=pro_x", "invalid_data", ["provider_ids"]],
      ["unknown=1", "invalid_data", ["unknown"]],
      ["after=pde_a&before=pde_b", "bad_request", null],
      ["after=pde_a&cursor=abc", "bad_request", null],
      ["cursor=not-a-cursor", "bad_request", ["cursor"]],
    ];
    for (const [query, code, path] of cases) {
      const res = await t.fetch(`/provider-deployments?${query}`);
      const label = query.slice(0, 80);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code, entity: "query" });
      if (path) expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    }
  });

  it("answers wrong methods with 405 and the allowed ones", async () => {
    const collection = await t.fetch("/provider-deployments", { method: "PUT" });
    expect(collection.status).toBe(405);
    expect(collection.headers.get("allow")).toBe("GET, POST");
    expect(await collection.json()).toMatchObject({ code: "method_not_allowed" });

    const item = await t.fetch(`/provider-deployments/${UNKNOWN}`, { method: "POST" });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "GET", "PATCH"]);
  });

  it("answers an undecodable id with 400, not 500", async () => {
    const res = await t.fetch("/provider-deployments/%zz");
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "bad_request", ok: false });
  });
});

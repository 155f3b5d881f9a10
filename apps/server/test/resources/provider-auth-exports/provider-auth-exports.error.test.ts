import type { ErrorBody } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  activeAuthConfig,
  catalogGithub,
  cfg,
  createAuthConfig,
  exportFrom,
  importInto,
  pendingAuthConfig,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { expectBadBodiesRefused, json, send, snapshotTables } from "../../support/security.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const UNKNOWN_DEPLOYMENT = "pde_00000000000000000000000000";
const UNKNOWN_CONFIG = "pac_00000000000000000000000000";
const UNKNOWN_EXPORT = "pace_00000000000000000000000000";

/** What an export could change: the export records and the auth configs it reads. */
const rows = () => snapshotTables(t.db, ["provider_auth_exports", "provider_auth_configs"]);

const activeConfig = () => activeAuthConfig(t.client, github);

async function postExport(deploymentId: string, configId: string, body: unknown, init: RequestInit = {}) {
  const res = await t.fetch(`${cfg(deploymentId, configId)}/exports`, { ...json("POST", body), ...init });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as ErrorBody };
}

describe("provider auth exports: invalid requests", () => {
  it("rejects invalid create bodies with field paths, exporting nothing and echoing no token", async () => {
    const { deployment, config, tokens } = await activeConfig();
    const before = await rows();
    const cases: [unknown, (string | number)[], string][] = [
      [{}, ["note"], "required"],
      [{ metadata: { a: 1 } }, ["note"], "required"],
      [{ note: "" }, ["note"], "min_length"],
      [{ note: "n".repeat(1001) }, ["note"], "max_length"],
      [{ note: 5 }, ["note"], "type"],
      [{ note: null }, ["note"], "type"],
      [{ note: "x", metadata: "m" }, ["metadata"], "type"],
      [{ note: "x", metadata: null }, ["metadata"], "type"],
      [
        { note: "x", metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
        ["metadata"],
        "max_properties",
      ],
      [{ note: "x", value: tokens }, ["value"], "additional_property"],
      [[{ note: "x" }], [], "type"],
    ];
    for (const [body, path, code] of cases) {
      const res = await postExport(deployment.id, config.id, body);
      const label = JSON.stringify(body).slice(0, 80);
      expect(res.status, label).toBe(400);
      expect(res.body, label).toMatchObject({ __typename: "error", code: "invalid_data", status: 400, entity: "body" });
      expect(res.body.errors, label).toContainEqual(expect.objectContaining({ code, path }));
      expect(res.text, label).not.toContain(tokens.access_token);
    }
    await expectBadBodiesRefused(t, `${cfg(deployment.id, config.id)}/exports`, { note: "n".repeat(70 * 1024) });
    expect(await rows()).toEqual(before);
  });

  it("answers 409 for an auth config that holds no credential data yet", async () => {
    const { deployment, config } = await pendingAuthConfig(t.client, github);
    const before = await rows();
    const res = await postExport(deployment.id, config.id, { note: "Too early" });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "conflict", status: 409, entity: "provider.auth_config" });
    expect(res.body.message).toContain(config.id);
    expect(res.body.message).toContain("pending");
    expect(await rows()).toEqual(before);
  });

  it("validates list queries and answers wrong methods with 405", async () => {
    const { deployment, config } = await activeConfig();
    const exported = await exportFrom(t.client, deployment.id, config.id);
    const base = `${cfg(deployment.id, config.id)}/exports`;
    for (const [query, code] of [
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["order=sideways", "invalid_data"],
      ["note=x", "invalid_data"],
      ["cursor=x", "bad_request"],
    ]) {
      const res = await t.fetch(`${base}?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
    const before = await rows();
    for (const [path, method] of [
      [`${base}/${exported.id}`, "DELETE"],
      [`${base}/${exported.id}`, "PATCH"],
      [`${base}/${exported.id}`, "PUT"],
      [base, "DELETE"],
    ] as const) {
      const res = await t.fetch(path, json(method, {}));
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(await res.json()).toMatchObject({ code: "method_not_allowed" });
    }
    expect(await rows()).toEqual(before);
  });
});

describe("provider auth exports: not found", () => {
  it("answers 404 for an unknown deployment or auth config, or one of another deployment, on every operation", async () => {
    const { deployment, config } = await activeConfig();
    const exported = await exportFrom(t.client, deployment.id, config.id);
    const other = await activeConfig();
    const before = await rows();
    const cases: [string, string, string][] = [
      [UNKNOWN_DEPLOYMENT, config.id, "provider.deployment"],
      [deployment.id, UNKNOWN_CONFIG, "provider.auth_config"],
      [other.deployment.id, config.id, "provider.auth_config"],
      [deployment.id, other.config.id, "provider.auth_config"],
    ];
    for (const [dep, conf, entity] of cases) {
      const base = `${cfg(dep, conf)}/exports`;
      const answers = await send(t, [
        [base, { method: "GET" }],
        [base, json("POST", { note: "x" })],
        [`${base}/${exported.id}`, { method: "GET" }],
      ]);
      for (const res of answers) {
        expect(res.status, `${res.url}`).toBe(404);
        expect(await res.json(), `${res.url}`).toMatchObject({ code: "not_found", status: 404, entity });
      }
    }
    expect(await rows()).toEqual(before);
  });

  it("answers 404 for an unknown export and for an export of another auth config", async () => {
    const { deployment, credentials, config } = await activeConfig();
    const sibling = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    await importInto(t.client, deployment.id, sibling.id, tokenSet());
    const theirs = await exportFrom(t.client, deployment.id, sibling.id);
    for (const id of [UNKNOWN_EXPORT, theirs.id, "pace_", "exports"]) {
      const res = await t.fetch(`${cfg(deployment.id, config.id)}/exports/${id}`);
      expect(res.status, id).toBe(404);
      const text = await res.text();
      expect(JSON.parse(text), id).toMatchObject({ code: "not_found", entity: "provider.auth_export" });
      expect(JSON.parse(text).message, id).toContain(id);
      expect(text, id).not.toContain(theirs.value.type === "oauth" ? theirs.value.access_token : "");
    }
  });

  it("drops an auth config's exports with it", async () => {
    const { deployment, config } = await activeConfig();
    const exported = await exportFrom(t.client, deployment.id, config.id);
    const deleted = await t.fetch(cfg(deployment.id, config.id), { method: "DELETE" });
    expect(deleted.status).toBe(200);
    const res = await t.fetch(`${cfg(deployment.id, config.id)}/exports/${exported.id}`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", entity: "provider.auth_config" });
    const left = await t.db.selectFrom("provider_auth_exports").select("id").where("id", "=", exported.id).execute();
    expect(left).toEqual([]);
  });
});

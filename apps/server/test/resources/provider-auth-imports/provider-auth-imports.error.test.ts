import type { ErrorBody } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/lib/ids.ts";
import {
  catalogGithub,
  cfg,
  createAuthConfig,
  getAuthConfig,
  importInto,
  pendingAuthConfig,
  secret,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json } from "../../support/security.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const UNKNOWN_CONFIG = "pac_00000000000000000000000000";
const UNKNOWN_IMPORT = "paci_00000000000000000000000000";

const pendingConfig = () => pendingAuthConfig(t.client, github);

/** What an import could change: the auth config's row and the import records. */
async function state(configId: string) {
  return {
    config: await t.db.selectFrom("provider_auth_configs").selectAll().where("id", "=", configId).executeTakeFirst(),
    imports: await t.db
      .selectFrom("provider_auth_imports")
      .select("id")
      .where("provider_auth_config_id", "=", configId)
      .orderBy("id")
      .execute(),
  };
}

async function postImport(path: string, body: unknown) {
  const res = await t.fetch(`${path}/imports`, json("POST", body));
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as ErrorBody };
}

describe("provider auth imports: values that do not match the import schema", () => {
  it("answers 400 with paths under value for OAuth token sets, never echoing the values, changing nothing", async () => {
    const { deployment, config } = await pendingConfig();
    const before = await state(config.id);
    const s1 = secret("leak-one");
    const s2 = secret("leak-two");
    const cases: [string, Record<string, unknown>, { path: (string | number)[]; code?: string }[]][] = [
      ["empty", {}, [{ path: ["value", "access_token"], code: "required" }]],
      ["no access token", { refresh_token: s1 }, [{ path: ["value", "access_token"], code: "required" }]],
      ["empty access token", { access_token: "", refresh_token: s1 }, [{ path: ["value", "access_token"] }]],
      ["access token not a string", { access_token: [s1] }, [{ path: ["value", "access_token"], code: "type" }]],
      ["access token an object", { access_token: { v: s1 } }, [{ path: ["value", "access_token"], code: "type" }]],
      [
        "several at once",
        { access_token: s1, refresh_token: 7, scope: ["repo"], expires_at: `tomorrow ${s2}`, client_secret: s2 },
        [
          { path: ["value", "refresh_token"], code: "type" },
          { path: ["value", "scope"], code: "type" },
          { path: ["value", "expires_at"], code: "format" },
          { path: ["value", "client_secret"], code: "additional_property" },
        ],
      ],
      ["not a date", { access_token: s1, expires_at: "2031-02-30T00:00:00Z" }, [{ path: ["value", "expires_at"] }]],
      ["a manual export value", { type: "manual", access_token: s1 }, [{ path: ["value", "type"] }]],
      [
        "a token method value",
        { token: s1 },
        [
          { path: ["value", "access_token"], code: "required" },
          { path: ["value", "token"], code: "additional_property" },
        ],
      ],
    ];
    for (const [label, value, expected] of cases) {
      const res = await postImport(cfg(deployment.id, config.id), { note: "bad", value });
      expect(res.status, label).toBe(400);
      for (const leak of [s1, s2]) expect(res.text, label).not.toContain(leak);
      expect(res.body, label).toMatchObject({ code: "invalid_data", entity: "body", status: 400, ok: false });
      expect(res.body.errors, label).toEqual(expect.arrayContaining(expected.map((e) => expect.objectContaining(e))));
      for (const e of res.body.errors ?? []) expect(e.path[0], label).toBe("value");
      expect(res.body.errors, label).toHaveLength(expected.length);
    }
    expect(await state(config.id)).toEqual(before);
    expect((await getAuthConfig(t.client, deployment.id, config.id)).status).toBe("pending");
  });

  it("answers 400 with paths under value for the token method's schema, changing nothing", async () => {
    const { deployment, config } = await pendingConfig();
    await importInto(t.client, deployment.id, config.id, tokenSet());
    const before = await state(config.id);
    const pat = secret("ghp-leak");
    const cases: [Record<string, unknown>, (string | number)[][]][] = [
      [{}, [["value", "token"]]],
      [{ token: "" }, [["value", "token"]]],
      [{ token: 12345 }, [["value", "token"]]],
      [{ token: pat, access_token: pat }, [["value", "access_token"]]],
      [{ type: "oauth", token: pat }, [["value", "type"]]],
    ];
    for (const [value, paths] of cases) {
      const res = await postImport(cfg(deployment.id, config.id), {
        note: "bad",
        value,
        providerAuthMethodId: github.tokenMethodId,
      });
      const label = JSON.stringify(value);
      expect(res.status, label).toBe(400);
      expect(res.text, label).not.toContain(pat);
      expect(res.body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(
        res.body.errors?.map((e) => e.path),
        label,
      ).toEqual(paths);
    }
    // Nothing moved: still the OAuth method, active, with its credentials.
    expect(await state(config.id)).toEqual(before);
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toMatchObject({
      type: "oauth_manual",
      provider_auth_method_id: github.oauthMethodId,
    });
  });

  it("says in its message which schema the value failed, once", async () => {
    const { deployment, config } = await pendingConfig();
    const res = await postImport(cfg(deployment.id, config.id), { note: "bad", value: {} });
    expect(res.status).toBe(400);
    // `what` opens the message (src/lib/json-schema.ts); the import schema is not a "config schema".
    expect(res.body.message).toBe(
      "value does not match the auth method's import schema: value.access_token is required.",
    );
  });

  it("answers a date-time the schema accepts but the server cannot store with a 201 or a 400, never a 500", async () => {
    const { deployment, config } = await pendingConfig();
    const before = await state(config.id);
    // RFC 3339 allows a leap second (and year 0000); JSON Schema's date-time format (ajv-formats) accepts them,
    // but `new Date(…)` cannot hold a leap second and PostgreSQL's timestamptz has no year 0.
    const outcomes: Record<string, number> = {};
    for (const expiresAt of ["2016-12-31T23:59:60Z", "2016-12-31T22:59:60-01:00", "0000-01-01T00:00:00Z"]) {
      const res = await postImport(cfg(deployment.id, config.id), {
        note: "unusual date-time",
        value: { access_token: secret("gho"), expires_at: expiresAt },
      });
      outcomes[expiresAt] = res.status;
      if (res.status === 400) {
        expect(
          res.body.errors?.map((e) => e.path),
          expiresAt,
        ).toEqual([["value", "expires_at"]]);
        expect(await state(config.id), expiresAt).toEqual(before);
      }
    }
    expect(Object.entries(outcomes).filter(([, status]) => status !== 201 && status !== 400)).toEqual([]);
  });

  it("rejects invalid bodies with field paths, writing nothing", async () => {
    const { deployment, config } = await pendingConfig();
    const before = await state(config.id);
    const value = tokenSet();
    const tooMany = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, "v"]));
    const cases: [unknown, (string | number)[]][] = [
      [{ value }, ["note"]],
      [{ note: "", value }, ["note"]],
      [{ note: "n".repeat(1001), value }, ["note"]],
      [{ note: "x" }, ["value"]],
      [{ note: "x", value: value.access_token }, ["value"]],
      [{ note: "x", value: [value] }, ["value"]],
      [{ note: "x", value: null }, ["value"]],
      [{ note: "x", value: tooMany }, ["value"]],
      [{ note: "x", value, providerAuthMethodId: "" }, ["providerAuthMethodId"]],
      [{ note: "x", value, provider_auth_method_id: github.oauthMethodId }, ["provider_auth_method_id"]],
      [{ note: "x", value, metadata: "m" }, ["metadata"]],
    ];
    for (const [body, path] of cases) {
      const res = await postImport(cfg(deployment.id, config.id), body);
      const label = JSON.stringify(path);
      expect(res.status, label).toBe(400);
      expect(res.text, label).not.toContain(value.access_token);
      expect(res.body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(
        res.body.errors?.map((e) => e.path),
        label,
      ).toContainEqual(path);
    }
    const bad = await t.fetch(
      `${cfg(deployment.id, config.id)}/imports`,
      json("POST", `{"note":"x","value":{"access_token":"${value.access_token}"`),
    );
    expect(bad.status).toBe(400);
    const badText = await bad.text();
    expect(badText).not.toContain(value.access_token);
    expect(JSON.parse(badText)).toMatchObject({ code: "bad_request" });
    expect(await state(config.id)).toEqual(before);
  });
});

describe("provider auth imports: not found", () => {
  it("answers 404 for an unknown auth method or one of another provider, on create and on the schema", async () => {
    const { deployment, config } = await pendingConfig();
    const before = await state(config.id);
    const { providerId } = await seedCatalogProvider(t.db, "Other provider");
    const foreign = newId("pam");
    await t.db
      .insertInto("provider_auth_methods")
      .values({
        id: foreign,
        provider_id: providerId,
        provider_version_id: null,
        key: "token",
        type: "token",
        name: "Other token",
        description: null,
        input_schema: JSON.stringify({ type: "object", properties: { token: { type: "string" } } }),
        scopes: JSON.stringify([]),
        oauth: null,
      })
      .execute();
    for (const methodId of ["pam_00000000000000000000000000", foreign]) {
      const res = await postImport(cfg(deployment.id, config.id), {
        note: "x",
        value: { token: "t" },
        providerAuthMethodId: methodId,
      });
      expect(res.status, methodId).toBe(404);
      expect(res.body).toMatchObject({ code: "not_found", entity: "provider.auth_method" });
      expect(res.body.message).toContain(methodId);

      const schema = await t.fetch(
        `${cfg(deployment.id, config.id)}/imports/schema?provider_auth_method_id=${methodId}`,
      );
      expect(schema.status, methodId).toBe(404);
      expect(await schema.json()).toMatchObject({ code: "not_found", entity: "provider.auth_method" });
    }
    expect(await state(config.id)).toEqual(before);
  });

  it("answers 404 for unknown imports and for imports of another auth config", async () => {
    const { deployment, credentials, config } = await pendingConfig();
    const other = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    const theirs = await importInto(t.client, deployment.id, other.id, tokenSet());
    for (const id of [UNKNOWN_IMPORT, theirs.id, "schema2", "schemas"]) {
      const res = await t.fetch(`${cfg(deployment.id, config.id)}/imports/${id}`);
      expect(res.status, id).toBe(404);
      const body = (await res.json()) as ErrorBody;
      expect(body, id).toMatchObject({ code: "not_found", entity: "provider.auth_import" });
      expect(body.message).toContain(id);
    }
  });

  it("answers 404 for an unknown deployment or auth config, or one of another deployment, on every operation", async () => {
    const { deployment, config } = await pendingConfig();
    const imported = await importInto(t.client, deployment.id, config.id, tokenSet());
    const other = await pendingConfig();
    const before = await state(config.id);
    const cases: [string, string, string][] = [
      ["pde_00000000000000000000000000", config.id, "provider.deployment"],
      [deployment.id, UNKNOWN_CONFIG, "provider.auth_config"],
      [other.deployment.id, config.id, "provider.auth_config"],
      [deployment.id, other.config.id, "provider.auth_config"],
    ];
    for (const [dep, conf, entity] of cases) {
      const base = cfg(dep, conf);
      const requests: [string, RequestInit][] = [
        [`${base}/imports`, { method: "GET" }],
        [`${base}/imports`, json("POST", { note: "x", value: tokenSet() })],
        [`${base}/imports/${imported.id}`, { method: "GET" }],
        [`${base}/imports/schema`, { method: "GET" }],
        [`${base}/imports/schema?provider_auth_method_id=${github.tokenMethodId}`, { method: "GET" }],
      ];
      for (const [p, init] of requests) {
        const res = await t.fetch(p, init);
        expect(res.status, `${init.method} ${p}`).toBe(404);
        expect(await res.json(), `${init.method} ${p}`).toMatchObject({ code: "not_found", entity });
      }
    }
    expect(await state(config.id)).toEqual(before);
    expect(await state(other.config.id)).toMatchObject({ imports: [] });
  });

  it("validates the schema and list queries and answers wrong methods with 405", async () => {
    const { deployment, config } = await pendingConfig();
    const base = cfg(deployment.id, config.id);
    const cases: [string, string][] = [
      [`${base}/imports/schema?provider_auth_method_id=`, "invalid_data"],
      [
        `${base}/imports/schema?provider_auth_method_id=${github.oauthMethodId}&provider_auth_method_id=${github.tokenMethodId}`,
        "invalid_data",
      ],
      [`${base}/imports/schema?method=${github.tokenMethodId}`, "invalid_data"],
      [`${base}/imports?limit=0`, "invalid_data"],
      [`${base}/imports?provider_auth_method_id=${github.oauthMethodId}`, "invalid_data"],
      [`${base}/imports?cursor=x`, "bad_request"],
    ];
    for (const [p, code] of cases) {
      const res = await t.fetch(p);
      expect(res.status, p).toBe(400);
      expect(await res.json(), p).toMatchObject({ code, entity: "query" });
    }
    const imported = await importInto(t.client, deployment.id, config.id, tokenSet());
    for (const [p, method] of [
      [`${base}/imports/${imported.id}`, "DELETE"],
      [`${base}/imports/${imported.id}`, "PATCH"],
      [`${base}/imports/schema`, "POST"],
      [`${base}/imports`, "DELETE"],
    ] as const) {
      const res = await t.fetch(p, json(method, {}));
      expect(res.status, `${method} ${p}`).toBe(405);
      expect(await res.json()).toMatchObject({ code: "method_not_allowed" });
    }
  });
});

import { unwrap } from "@toolplane/client";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { credentialAad } from "../../../src/resources/provider-auth-configs/credential-data.ts";
import {
  catalogGithub,
  cfg,
  createAuthConfig,
  createCredentials,
  exportFrom,
  getAuthConfig,
  ISO,
  importInto,
  pendingAuthConfig,
  secret,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

/** A deployment of github with OAuth credentials and a pending OAuth auth config. */
const pendingConfig = (client = t.client) => pendingAuthConfig(client, github);

async function schemaFor(deploymentId: string, configId: string, methodId?: string) {
  return unwrap(
    t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports/schema",
      {
        params: {
          path: { provider_deployment_id: deploymentId, provider_auth_config_id: configId },
          ...(methodId ? { query: { provider_auth_method_id: methodId } } : {}),
        },
      },
    ),
  );
}

async function storedCredential(configId: string) {
  const row = await t.db
    .selectFrom("provider_auth_configs")
    .select(["credential_ciphertext", "expires_at"])
    .where("id", "=", configId)
    .executeTakeFirstOrThrow();
  if (!row.credential_ciphertext) throw new Error("no credential data");
  return {
    ciphertext: row.credential_ciphertext,
    expiresAt: row.expires_at,
    data: JSON.parse(t.secrets.decrypt(row.credential_ciphertext, credentialAad(configId))) as Record<string, unknown>,
  };
}

describe("provider auth imports: the import schema", () => {
  it("serves the schema of the auth config's own OAuth method: the token set, plus the export's type", async () => {
    const { deployment, config } = await pendingConfig();
    // The literal segment is routed before imports/{id}: never "import schema not found".
    const raw = await t.fetch(`${cfg(deployment.id, config.id)}/imports/schema`);
    expect(raw.status).toBe(200);
    const schema = (await raw.json()) as { schema: { properties: Record<string, unknown> } };
    expect(schema).toMatchObject({
      object: "provider.auth_import_schema",
      provider_auth_method_id: github.oauthMethodId,
    });
    expect(Object.keys(schema).sort()).toEqual(["object", "provider_auth_method_id", "schema"]);
    expect(schema.schema).toMatchObject({
      type: "object",
      required: ["access_token"],
      additionalProperties: false,
      properties: {
        type: { const: "oauth" },
        access_token: { type: "string" },
        expires_at: { format: "date-time" },
      },
    });
    expect(Object.keys(schema.schema.properties).sort()).toEqual(
      ["access_token", "expires_at", "refresh_token", "scope", "token_type", "type"].sort(),
    );
    // Naming the config's own method explicitly gives the same schema.
    expect(await schemaFor(deployment.id, config.id, github.oauthMethodId)).toEqual(schema);

    // It is a usable JSON Schema: a token set and an export value pass; no access token, or a manual value, fail.
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const validate = ajv.compile(schema.schema);
    expect(validate(tokenSet())).toBe(true);
    expect(validate({ access_token: "a" })).toBe(true);
    expect(
      validate({
        type: "oauth",
        access_token: "a",
        refresh_token: null,
        token_type: "Bearer",
        scope: null,
        expires_at: null,
      }),
    ).toBe(true);
    expect(validate({})).toBe(false);
    expect(validate({ type: "manual", access_token: "a" })).toBe(false);
    expect(validate({ access_token: "a", extra: 1 })).toBe(false);
  });

  it("serves the schema of another method of the provider when provider_auth_method_id names it", async () => {
    const { deployment, config } = await pendingConfig();
    const token = await schemaFor(deployment.id, config.id, github.tokenMethodId);
    expect(token).toEqual({
      object: "provider.auth_import_schema",
      provider_auth_method_id: github.tokenMethodId,
      schema: {
        type: "object",
        properties: {
          token: { type: "string", minLength: 1, description: "The personal access token." },
          type: { const: "manual" },
        },
        required: ["token"],
        additionalProperties: false,
      },
    });
    // The same through a raw request.
    const raw = await t.fetch(
      `${cfg(deployment.id, config.id)}/imports/schema?provider_auth_method_id=${github.tokenMethodId}`,
    );
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual(token);
    // Asking does not move the auth config.
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toEqual(config);
  });
});

describe("provider auth imports: importing", () => {
  it("imports an OAuth token set: the auth config becomes active oauth_manual, the tokens stored encrypted", async () => {
    const { deployment, credentials, config } = await pendingConfig();
    const tokens = tokenSet({ expires_at: "2031-05-06T07:08:09.123Z" });
    const res = await t.fetch(`${cfg(deployment.id, config.id)}/imports`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ note: "Moved from the old instance", metadata: { ticket: "OPS-1" }, value: tokens }),
    });
    expect(res.status).toBe(201);
    const text = await res.text();
    for (const leak of [tokens.access_token, tokens.refresh_token]) expect(text).not.toContain(leak);
    const created = JSON.parse(text);
    expect(created).toEqual({
      object: "provider.auth_import",
      id: expect.stringMatching(/^paci_[0-9a-z]{26}$/),
      note: "Moved from the old instance",
      metadata: { ticket: "OPS-1" },
      provider_id: github.providerId,
      provider_deployment_id: deployment.id,
      provider_auth_config_id: config.id,
      provider_auth_method_id: github.oauthMethodId,
      created_at: expect.stringMatching(ISO),
    });

    const after = await getAuthConfig(t.client, deployment.id, config.id);
    expect(after).toEqual({
      ...config,
      type: "oauth_manual",
      status: "active",
      status_reason: null,
      provider_auth_method_id: github.oauthMethodId,
      provider_auth_credentials_id: credentials.id,
      updated_at: expect.stringMatching(ISO),
    });
    expect(after.updated_at >= config.updated_at).toBe(true);

    const stored = await storedCredential(config.id);
    for (const leak of [tokens.access_token, tokens.refresh_token]) expect(stored.ciphertext).not.toContain(leak);
    expect(stored.data).toEqual({
      kind: "oauth",
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      token_type: "Bearer",
      scope: "repo read:org",
      expires_at: "2031-05-06T07:08:09.123Z",
    });
    expect(new Date(stored.expiresAt ?? 0).toISOString()).toBe("2031-05-06T07:08:09.123Z");
    const importRow = await t.db
      .selectFrom("provider_auth_imports")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(importRow)).not.toContain(tokens.access_token);
    expect(importRow).toMatchObject({ instance_id: t.tenant.instanceId, provider_auth_config_id: config.id });
  });

  it("marks an expired token without a refresh token expired, with a reason; a refresh token keeps it active", async () => {
    const { deployment, config } = await pendingConfig();
    const past = new Date(Date.now() - 60_000).toISOString();
    const stale = tokenSet({ refresh_token: null, expires_at: past });
    await importInto(t.client, deployment.id, config.id, stale);
    const expired = await getAuthConfig(t.client, deployment.id, config.id);
    expect(expired).toMatchObject({ status: "expired", type: "oauth_manual" });
    expect(expired.status_reason).toEqual(expect.any(String));
    expect(expired.status_reason?.length).toBeGreaterThan(0);
    expect(expired.status_reason).not.toContain(stale.access_token);

    // Without a refresh_token member at all, likewise.
    const { refresh_token: _omitted, ...noRefresh } = tokenSet({ expires_at: past });
    await importInto(t.client, deployment.id, config.id, noRefresh);
    expect((await getAuthConfig(t.client, deployment.id, config.id)).status).toBe("expired");

    // An expired access token with a refresh token can be renewed: active, reason cleared.
    await importInto(t.client, deployment.id, config.id, tokenSet({ expires_at: past }));
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toMatchObject({
      status: "active",
      status_reason: null,
    });

    // A token that never expires is active too.
    await importInto(t.client, deployment.id, config.id, stale);
    await importInto(t.client, deployment.id, config.id, { access_token: secret("gho"), expires_at: null });
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toMatchObject({
      status: "active",
      status_reason: null,
    });
  });

  it("imports a token for the token method: manual, without credentials, and the config moves to that method", async () => {
    const { deployment, credentials, config } = await pendingConfig();
    const pat = secret("ghp");
    const created = await importInto(
      t.client,
      deployment.id,
      config.id,
      { token: pat },
      { providerAuthMethodId: github.tokenMethodId, note: "A personal access token" },
    );
    expect(created).toMatchObject({
      provider_auth_method_id: github.tokenMethodId,
      provider_auth_config_id: config.id,
      note: "A personal access token",
      metadata: null,
    });
    const after = await getAuthConfig(t.client, deployment.id, config.id);
    expect(after).toMatchObject({
      type: "manual",
      status: "active",
      status_reason: null,
      provider_auth_method_id: github.tokenMethodId,
      provider_auth_credentials_id: null,
    });
    expect((await storedCredential(config.id)).data).toEqual({ kind: "manual", values: { token: pat } });
    expect((await storedCredential(config.id)).expiresAt).toBeNull();

    // The default schema is now the token method's, and the next import defaults to it.
    expect((await schemaFor(deployment.id, config.id)).provider_auth_method_id).toBe(github.tokenMethodId);
    const pat2 = secret("ghp");
    await importInto(t.client, deployment.id, config.id, { token: pat2 });
    expect((await storedCredential(config.id)).data).toEqual({ kind: "manual", values: { token: pat2 } });

    // The credentials are no longer used, so they can go.
    const deleted = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      { params: { path: { provider_deployment_id: deployment.id, provider_auth_credentials_id: credentials.id } } },
    );
    expect(deleted.response.status).toBe(200);

    // Importing OAuth tokens again moves it back to the OAuth method (without a client now).
    await importInto(t.client, deployment.id, config.id, tokenSet(), { providerAuthMethodId: github.oauthMethodId });
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toMatchObject({
      type: "oauth_manual",
      status: "active",
      provider_auth_method_id: github.oauthMethodId,
      provider_auth_credentials_id: null,
    });
  });

  it("stores expires_at as UTC with milliseconds and fills in what a minimal token set leaves out", async () => {
    const { deployment, config } = await pendingConfig();
    await importInto(t.client, deployment.id, config.id, tokenSet({ expires_at: "2031-01-01T01:30:00+01:30" }));
    expect((await storedCredential(config.id)).data.expires_at).toBe("2031-01-01T00:00:00.000Z");

    const accessToken = secret("gho");
    await importInto(t.client, deployment.id, config.id, { access_token: accessToken });
    expect((await storedCredential(config.id)).data).toEqual({
      kind: "oauth",
      access_token: accessToken,
      refresh_token: null,
      token_type: "Bearer",
      scope: null,
      expires_at: null,
    });
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toMatchObject({ status: "active" });
  });

  it("accepts null for every optional token member the import schema documents as nullable", async () => {
    // ProviderAuthImportSchema: `refresh_token`, `token_type`, `scope`, `expires_at` optional and nullable.
    const { deployment, config } = await pendingConfig();
    const accessToken = secret("gho");
    const res = await t.client.POST(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports",
      {
        params: { path: { provider_deployment_id: deployment.id, provider_auth_config_id: config.id } },
        body: {
          note: "All nullable members null",
          value: { access_token: accessToken, refresh_token: null, token_type: null, scope: null, expires_at: null },
        },
      },
    );
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toMatchObject({ status: "active" });
    const schema = await schemaFor(deployment.id, config.id);
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    expect(ajv.compile(schema.schema)({ access_token: "a", token_type: null })).toBe(true);
  });

  it("lists and gets an auth config's imports, oldest first, never with the imported values", async () => {
    const { deployment, config } = await pendingConfig();
    const values = [tokenSet(), tokenSet(), { token: secret("ghp") }];
    const first = await importInto(t.client, deployment.id, config.id, values[0] ?? {}, {
      note: "first",
      metadata: { n: 1 },
    });
    const second = await importInto(t.client, deployment.id, config.id, values[1] ?? {}, { note: "second" });
    const third = await importInto(t.client, deployment.id, config.id, values[2] ?? {}, {
      note: "third",
      providerAuthMethodId: github.tokenMethodId,
    });
    // Another auth config's imports are not listed here.
    const other = await createAuthConfig(
      t.client,
      deployment.id,
      github.oauthMethodId,
      (await createCredentials(t.client, deployment.id)).id,
    );
    const elsewhere = await importInto(t.client, deployment.id, other.id, tokenSet());

    const p = { provider_deployment_id: deployment.id, provider_auth_config_id: config.id };
    const listRoute = "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports";
    const list = await unwrap(t.client.GET(listRoute, { params: { path: p } }));
    expect(list).toEqual({
      items: [first, second, third],
      pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
    });
    expect(list.items.map((i) => i.provider_auth_method_id)).toEqual([
      github.oauthMethodId,
      github.oauthMethodId,
      github.tokenMethodId,
    ]);
    for (const item of list.items) expect(Object.keys(item)).not.toContain("value");

    const got = await unwrap(
      t.client.GET(`${listRoute}/{provider_auth_import_id}`, {
        params: { path: { ...p, provider_auth_import_id: second.id } },
      }),
    );
    expect(got).toEqual(second);

    const desc = await unwrap(t.client.GET(listRoute, { params: { path: p, query: { order: "desc", limit: 2 } } }));
    expect(desc.items.map((i) => i.id)).toEqual([third.id, second.id]);
    expect(desc.pagination.has_more_after).toBe(true);
    const next = await unwrap(
      t.client.GET(listRoute, { params: { path: p, query: { limit: 2, cursor: desc.pagination.next_cursor ?? "" } } }),
    );
    expect(next.items.map((i) => i.id)).toEqual([first.id]);
    const paged: string[] = [];
    for await (const i of t.client.paginate(listRoute, { params: { path: p, query: { limit: 1 } } })) paged.push(i.id);
    expect(paged).toEqual([first.id, second.id, third.id]);
    expect(paged).not.toContain(elsewhere.id);

    const texts = [
      await (await t.fetch(`${cfg(deployment.id, config.id)}/imports`)).text(),
      ...(await Promise.all(
        [first, second, third].map(async (i) =>
          (await t.fetch(`${cfg(deployment.id, config.id)}/imports/${i.id}`)).text(),
        ),
      )),
    ];
    for (const text of texts) {
      for (const v of values)
        for (const s of Object.values(v)) if (typeof s === "string" && s.length > 20) expect(text).not.toContain(s);
    }
  });

  it("keeps every import as a record while the auth config holds only the latest value", async () => {
    const { deployment, config } = await pendingConfig();
    const older = tokenSet();
    const newer = tokenSet();
    await importInto(t.client, deployment.id, config.id, older);
    await importInto(t.client, deployment.id, config.id, newer);
    const stored = await storedCredential(config.id);
    expect(stored.data.access_token).toBe(newer.access_token);
    const exported = await exportFrom(t.client, deployment.id, config.id);
    expect(exported.value).toMatchObject({ type: "oauth", access_token: newer.access_token });
    const rows = await t.db
      .selectFrom("provider_auth_imports")
      .select("id")
      .where("provider_auth_config_id", "=", config.id)
      .execute();
    expect(rows).toHaveLength(2);
  });
});

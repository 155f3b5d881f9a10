import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { clientSecretAad } from "../../../src/resources/provider-auth-credentials/service.ts";
import { SecretBox } from "../../../src/secrets/secret-box.ts";
import {
  catalogGithub,
  createAuthConfig,
  createCredentials,
  exportFrom,
  ISO,
  importInto,
  secret,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { deploy } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import type { TestServer } from "../../support/server.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

type Client = TestServer["client"];

const path = (deploymentId: string, id: string) => ({
  path: { provider_deployment_id: deploymentId, provider_auth_credentials_id: id },
});

async function getCredentials(deploymentId: string, id: string, client: Client = t.client) {
  return unwrap(
    client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}", {
      params: path(deploymentId, id),
    }),
  );
}

async function listIds(deploymentId: string, query: string, apiKey = t.tenant.apiKey) {
  const res = await fetch(`${t.url}/provider-deployments/${deploymentId}/auth-credentials?${query}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(res.status, query).toBe(200);
  const body = (await res.json()) as { items: { id: string }[] };
  return body.items.map((c) => c.id);
}

describe("provider auth credentials: happy paths", () => {
  it("creates credentials with client_id shown, the secret encrypted at rest and never returned", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const clientSecret = secret("client-secret");
    const res = await t.fetch(`/provider-deployments/${deployment.id}/auth-credentials`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "GitHub OAuth app",
        description: "Registered for the org",
        metadata: { team: "platform", cost_center: 4711 },
        config: { type: "oauth", clientId: "Iv1.8a61f9b3a7aba766", clientSecret, scopes: ["repo", "read:org"] },
      }),
    });
    expect(res.status).toBe(201);
    const text = await res.text();
    expect(text).not.toContain(clientSecret);
    expect(text).not.toMatch(/clientSecret|client_secret|secret/i);
    const created = JSON.parse(text);
    expect(created).toEqual({
      object: "provider.auth_credentials",
      id: expect.stringMatching(/^par_[0-9a-z]{26}$/),
      type: "oauth",
      name: "GitHub OAuth app",
      description: "Registered for the org",
      metadata: { team: "platform", cost_center: 4711 },
      provider_id: github.providerId,
      client_id: "Iv1.8a61f9b3a7aba766",
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);

    const fetched = await getCredentials(deployment.id, created.id);
    expect(fetched).toEqual(created);

    // At rest: only a ciphertext, bound to this row, that the server's key opens to the secret.
    const row = await t.db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      instance_id: t.tenant.instanceId,
      provider_id: github.providerId,
      provider_deployment_id: deployment.id,
      type: "oauth",
      client_id: "Iv1.8a61f9b3a7aba766",
      scopes: ["repo", "read:org"],
    });
    expect(row.client_secret_ciphertext).not.toBe(clientSecret);
    expect(row.client_secret_ciphertext).not.toContain(clientSecret);
    expect(JSON.stringify(row)).not.toContain(clientSecret);
    const box = new SecretBox([t.secretKey]);
    expect(box.decrypt(String(row.client_secret_ciphertext), clientSecretAad(created.id))).toBe(clientSecret);
    // Bound to the row: the same ciphertext does not open as another row's.
    expect(() =>
      box.decrypt(String(row.client_secret_ciphertext), clientSecretAad("par_00000000000000000000000000")),
    ).toThrow();
    // The same secret twice gives two different ciphertexts.
    const twin = await createCredentials(t.client, deployment.id, { clientSecret });
    const twinRow = await t.db
      .selectFrom("provider_auth_credentials")
      .select("client_secret_ciphertext")
      .where("id", "=", twin.id)
      .executeTakeFirstOrThrow();
    expect(twinRow.client_secret_ciphertext).not.toBe(row.client_secret_ciphertext);
    expect(box.decrypt(String(twinRow.client_secret_ciphertext), clientSecretAad(twin.id))).toBe(clientSecret);
  });

  it("defaults description and metadata to null and scopes to none", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const created = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: deployment.id } },
        body: { name: "Minimal", config: { type: "oauth", clientId: "minimal-client", clientSecret: "s" } },
      }),
    );
    expect(created).toMatchObject({ name: "Minimal", description: null, metadata: null, client_id: "minimal-client" });
    const row = await t.db
      .selectFrom("provider_auth_credentials")
      .select("scopes")
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row.scopes).toEqual([]);
  });

  it("lists a deployment's credentials oldest first, filtered by id in every Union form", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const other = await deploy(t.client, github.providerId, "Other GitHub");
    const empty = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: deployment.id } },
      }),
    );
    expect(empty).toEqual({
      items: [],
      pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
    });

    const [a, b, c] = [
      await createCredentials(t.client, deployment.id, { name: "A" }),
      await createCredentials(t.client, deployment.id, { name: "B" }),
      await createCredentials(t.client, deployment.id, { name: "C" }),
    ];
    const elsewhere = await createCredentials(t.client, other.id, { name: "Elsewhere" });
    if (!a || !b || !c) throw new Error("unreachable");

    const all = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: deployment.id } },
      }),
    );
    expect(all.items).toEqual([a, b, c]);
    expect(JSON.stringify(all)).not.toMatch(/secret/i);
    expect(await listIds(deployment.id, "")).toEqual([a.id, b.id, c.id]);
    expect(await listIds(other.id, "")).toEqual([elsewhere.id]);

    expect(await listIds(deployment.id, `id=${b.id}`)).toEqual([b.id]);
    for (const q of [
      `id=${a.id}&id=${c.id}`,
      `id=${c.id}&id=${a.id}`,
      `id[]=${a.id}&id[]=${c.id}`,
      `id[1]=${c.id}&id[0]=${a.id}`,
      `id%5B%5D=${a.id}&id%5B%5D=${c.id}`,
      `id%5B0%5D=${a.id}&id%5B1%5D=${c.id}`,
      `id=${a.id}&id[]=${c.id}`,
    ]) {
      expect(await listIds(deployment.id, q), q).toEqual([a.id, c.id]);
    }
    // The typed client sends the form/explode array form.
    const typed = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: deployment.id }, query: { id: [c.id, b.id] } },
      }),
    );
    expect(typed.items.map((x) => x.id)).toEqual([b.id, c.id]);

    // Ids that are not this deployment's match nothing.
    expect(await listIds(deployment.id, "id=par_00000000000000000000000000")).toEqual([]);
    expect(await listIds(deployment.id, `id=${elsewhere.id}`)).toEqual([]);
    expect(await listIds(deployment.id, `id=${elsewhere.id}&id=${b.id}`)).toEqual([b.id]);
    // The filter combines with paging and order.
    expect(await listIds(deployment.id, `id=${a.id}&id=${b.id}&id=${c.id}&limit=2`)).toEqual([a.id, b.id]);
    expect(await listIds(deployment.id, `id=${a.id}&id=${c.id}&order=desc`)).toEqual([c.id, a.id]);
    expect(await listIds(deployment.id, `id=${a.id}&id=${c.id}&after=${a.id}`)).toEqual([c.id]);
  });

  it("pages through credentials with limit, cursors, after, before and order", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createCredentials(t.client, deployment.id, { name: `P${i}` })).id);
    const route = "/provider-deployments/{provider_deployment_id}/auth-credentials" as const;
    const p = { provider_deployment_id: deployment.id };

    const first = await unwrap(t.client.GET(route, { params: { path: p, query: { limit: 2 } } }));
    expect(first.items.map((x) => x.id)).toEqual(ids.slice(0, 2));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true, previous_cursor: null });
    const second = await unwrap(
      t.client.GET(route, { params: { path: p, query: { limit: 2, cursor: first.pagination.next_cursor ?? "" } } }),
    );
    expect(second.items.map((x) => x.id)).toEqual(ids.slice(2, 4));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });
    const back = await unwrap(
      t.client.GET(route, {
        params: { path: p, query: { limit: 2, cursor: second.pagination.previous_cursor ?? "" } },
      }),
    );
    expect(back.items.map((x) => x.id)).toEqual(ids.slice(0, 2));

    expect(await listIds(deployment.id, `after=${ids[2]}`)).toEqual(ids.slice(3));
    expect(await listIds(deployment.id, `before=${ids[2]}`)).toEqual(ids.slice(0, 2));
    expect(await listIds(deployment.id, "order=desc&limit=3")).toEqual([ids[4], ids[3], ids[2]]);

    const all: string[] = [];
    for await (const c of t.client.paginate(route, { params: { path: p, query: { limit: 2 } } })) all.push(c.id);
    expect(all).toEqual(ids);
  });

  it("updates name, description and metadata; null clears each; the registration stays", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const created = await createCredentials(t.client, deployment.id, {
      name: "Before",
      clientId: "kept-client",
      description: "Old",
      metadata: { a: 1 },
    });
    const before = await t.db
      .selectFrom("provider_auth_credentials")
      .select(["client_secret_ciphertext", "scopes"])
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    const route = "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}";
    const params = path(deployment.id, created.id);

    const updated = await unwrap(
      t.client.PATCH(route, { params, body: { name: "After", description: "New", metadata: { b: "two" } } }),
    );
    expect(updated).toEqual({
      ...created,
      name: "After",
      description: "New",
      metadata: { b: "two" },
      updated_at: expect.stringMatching(ISO),
    });
    expect(updated.updated_at >= created.updated_at).toBe(true);
    expect(await getCredentials(deployment.id, created.id)).toEqual(updated);

    // Omitted fields stay.
    const partial = await unwrap(t.client.PATCH(route, { params, body: { description: "Newer" } }));
    expect(partial).toMatchObject({ name: "After", description: "Newer", metadata: { b: "two" } });
    const same = await unwrap(t.client.PATCH(route, { params, body: {} }));
    expect({ ...same, updated_at: "" }).toEqual({ ...partial, updated_at: "" });

    const cleared = await unwrap(
      t.client.PATCH(route, { params, body: { name: null, description: null, metadata: null } }),
    );
    expect(cleared).toEqual({
      ...created,
      name: null,
      description: null,
      metadata: null,
      updated_at: expect.stringMatching(ISO),
    });
    expect(await getCredentials(deployment.id, created.id)).toEqual(cleared);
    const row = await t.db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ name: null, description: null, metadata: null, client_id: "kept-client" });
    expect(row.client_secret_ciphertext).toBe(before.client_secret_ciphertext);
    expect(row.scopes).toEqual(before.scopes);
  });

  it("deletes credentials and returns them as they were", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const doomed = await createCredentials(t.client, deployment.id, { name: "Doomed" });
    const keep = await createCredentials(t.client, deployment.id, { name: "Keep" });
    const current = await getCredentials(deployment.id, doomed.id);

    const res = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      { params: path(deployment.id, doomed.id) },
    );
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(current);

    const gone = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      { params: path(deployment.id, doomed.id) },
    );
    expect(gone.response.status).toBe(404);
    expect(gone.error).toMatchObject({ code: "not_found", entity: "provider.auth_credentials" });
    expect(
      await t.db.selectFrom("provider_auth_credentials").select("id").where("id", "=", doomed.id).execute(),
    ).toEqual([]);
    expect(await listIds(deployment.id, "")).toEqual([keep.id]);

    const again = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      { params: path(deployment.id, doomed.id) },
    );
    expect(again.response.status).toBe(404);
  });

  it("refuses to delete credentials an auth config uses (409 naming it, nothing deleted), then allows it", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const first = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id, { name: "1" });
    const second = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id, { name: "2" });
    const route = "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}";

    const refused = await t.client.DELETE(route, { params: path(deployment.id, credentials.id) });
    expect(refused.response.status).toBe(409);
    expect(refused.error).toMatchObject({ code: "conflict", status: 409, entity: "provider.auth_credentials" });
    expect([first.id, second.id].some((id) => refused.error?.message.includes(id))).toBe(true);
    expect(await getCredentials(deployment.id, credentials.id)).toEqual(credentials);
    const configs = await t.db
      .selectFrom("provider_auth_configs")
      .select(["id", "provider_auth_credentials_id"])
      .where("provider_deployment_id", "=", deployment.id)
      .orderBy("id")
      .execute();
    expect(configs).toEqual([
      { id: first.id, provider_auth_credentials_id: credentials.id },
      { id: second.id, provider_auth_credentials_id: credentials.id },
    ]);

    const configRoute = "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}";
    await unwrap(
      t.client.DELETE(configRoute, {
        params: { path: { provider_deployment_id: deployment.id, provider_auth_config_id: first.id } },
      }),
    );
    const stillUsed = await t.client.DELETE(route, { params: path(deployment.id, credentials.id) });
    expect(stillUsed.response.status).toBe(409);
    expect(stillUsed.error?.message).toContain(second.id);

    await unwrap(
      t.client.DELETE(configRoute, {
        params: { path: { provider_deployment_id: deployment.id, provider_auth_config_id: second.id } },
      }),
    );
    const deleted = await t.client.DELETE(route, { params: path(deployment.id, credentials.id) });
    expect(deleted.response.status).toBe(200);
    expect(deleted.data).toEqual(credentials);
    expect(
      await t.db.selectFrom("provider_auth_credentials").select("id").where("id", "=", credentials.id).execute(),
    ).toEqual([]);
  });

  it("goes with its deployment: deleting the deployment removes its credentials and auth configs", async () => {
    const deployment = await deploy(t.client, github.providerId, "Doomed deployment");
    const survivor = await deploy(t.client, github.providerId, "Surviving deployment");
    const credentials = await createCredentials(t.client, deployment.id);
    const unused = await createCredentials(t.client, deployment.id);
    const config = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    await importInto(t.client, deployment.id, config.id, tokenSet());
    await exportFrom(t.client, deployment.id, config.id);
    const keptCredentials = await createCredentials(t.client, survivor.id);
    const keptConfig = await createAuthConfig(t.client, survivor.id, github.oauthMethodId, keptCredentials.id);

    const res = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: deployment.id } },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);

    const rows = async (table: "provider_auth_credentials" | "provider_auth_configs" | "provider_auth_imports") =>
      (await t.db.selectFrom(table).select("id").where("provider_deployment_id", "=", deployment.id).execute()).map(
        (r) => r.id,
      );
    expect(await rows("provider_auth_credentials")).toEqual([]);
    expect(await rows("provider_auth_configs")).toEqual([]);
    expect(await rows("provider_auth_imports")).toEqual([]);
    expect(
      await t.db
        .selectFrom("provider_auth_exports")
        .select("id")
        .where("provider_auth_config_id", "=", config.id)
        .execute(),
    ).toEqual([]);
    expect(
      await t.db
        .selectFrom("provider_auth_credentials")
        .select("id")
        .where("id", "in", [credentials.id, unused.id])
        .execute(),
    ).toEqual([]);

    const gone = await t.client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials", {
      params: { path: { provider_deployment_id: deployment.id } },
    });
    expect(gone.response.status).toBe(404);
    expect(gone.error).toMatchObject({ code: "not_found", entity: "provider.deployment" });

    // The other deployment's rows are untouched.
    expect(await getCredentials(survivor.id, keptCredentials.id)).toEqual(keptCredentials);
    const kept = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
        params: { path: { provider_deployment_id: survivor.id, provider_auth_config_id: keptConfig.id } },
      }),
    );
    expect(kept).toEqual(keptConfig);
  });
});

import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  catalogGithub,
  createAuthConfig,
  createCredentials,
  exportFrom,
  getAuthConfig,
  ISO,
  importInto,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { deploy } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const route = "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}" as const;
const params = (deploymentId: string, id: string) => ({
  path: { provider_deployment_id: deploymentId, provider_auth_config_id: id },
});

async function listIds(deploymentId: string, query: string) {
  const res = await t.fetch(`/provider-deployments/${deploymentId}/auth-configs?${query}`);
  expect(res.status, query).toBe(200);
  return ((await res.json()) as { items: { id: string }[] }).items.map((c) => c.id);
}

describe("provider auth configs: happy paths", () => {
  it("creates an OAuth connection as oauth_manual and pending, referencing its method and credentials", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const res = await t.client.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
      params: { path: { provider_deployment_id: deployment.id } },
      body: {
        name: "Octocat's GitHub",
        description: "Work account",
        metadata: { team: "platform" },
        provider_auth_method_id: github.oauthMethodId,
        credentials: { type: "reference", provider_auth_credentials_id: credentials.id },
      },
    });
    expect(res.response.status).toBe(201);
    const created = res.data;
    if (!created) throw new Error("no body");
    expect(created).toEqual({
      object: "provider.auth_config",
      id: expect.stringMatching(/^pac_[0-9a-z]{26}$/),
      type: "oauth_manual",
      status: "pending",
      status_reason: null,
      name: "Octocat's GitHub",
      description: "Work account",
      metadata: { team: "platform" },
      provider_id: github.providerId,
      provider_deployment_id: deployment.id,
      provider_auth_method_id: github.oauthMethodId,
      provider_auth_credentials_id: credentials.id,
      consumer_id: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);
    expect(await getAuthConfig(t.client, deployment.id, created.id)).toEqual(created);

    const row = await t.db
      .selectFrom("provider_auth_configs")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      instance_id: t.tenant.instanceId,
      provider_deployment_id: deployment.id,
      provider_auth_method_id: github.oauthMethodId,
      provider_auth_credentials_id: credentials.id,
      credential_ciphertext: null,
      expires_at: null,
    });
  });

  it("defaults description and metadata to null", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const created = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    expect(created).toMatchObject({ description: null, metadata: null });
  });

  it("lists auth configs filtered by method and by credentials, each in every Union form, combined with AND", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const a = await createCredentials(t.client, deployment.id, { name: "A" });
    const b = await createCredentials(t.client, deployment.id, { name: "B" });
    const oauthA = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, a.id, { name: "oauth A" });
    const oauthB = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, b.id, { name: "oauth B" });
    const oauthA2 = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, a.id, { name: "oauth A 2" });
    // An import for the token method moves this one to it, without credentials.
    const token = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, b.id, { name: "token" });
    await importInto(
      t.client,
      deployment.id,
      token.id,
      { token: "ghp_x" },
      { providerAuthMethodId: github.tokenMethodId },
    );
    const other = await deploy(t.client, github.providerId, "Elsewhere");
    const elsewhere = await createAuthConfig(
      t.client,
      other.id,
      github.oauthMethodId,
      (await createCredentials(t.client, other.id)).id,
    );

    const all = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs", {
        params: { path: { provider_deployment_id: deployment.id } },
      }),
    );
    expect(all.items.map((c) => c.id)).toEqual([oauthA.id, oauthB.id, oauthA2.id, token.id]);
    expect(all.items[0]).toEqual(oauthA);
    expect(all.items[3]).toMatchObject({
      type: "manual",
      status: "active",
      provider_auth_method_id: github.tokenMethodId,
      provider_auth_credentials_id: null,
    });
    expect(await listIds(other.id, "")).toEqual([elsewhere.id]);

    const m = github.oauthMethodId;
    const tm = github.tokenMethodId;
    expect(await listIds(deployment.id, `provider_auth_method_id=${m}`)).toEqual([oauthA.id, oauthB.id, oauthA2.id]);
    expect(await listIds(deployment.id, `provider_auth_method_id=${tm}`)).toEqual([token.id]);
    for (const q of [
      `provider_auth_method_id=${m}&provider_auth_method_id=${tm}`,
      `provider_auth_method_id[]=${m}&provider_auth_method_id[]=${tm}`,
      `provider_auth_method_id[1]=${tm}&provider_auth_method_id[0]=${m}`,
      `provider_auth_method_id%5B%5D=${tm}&provider_auth_method_id%5B%5D=${m}`,
    ]) {
      expect(await listIds(deployment.id, q), q).toEqual([oauthA.id, oauthB.id, oauthA2.id, token.id]);
    }

    expect(await listIds(deployment.id, `provider_auth_credentials_id=${a.id}`)).toEqual([oauthA.id, oauthA2.id]);
    expect(await listIds(deployment.id, `provider_auth_credentials_id=${b.id}`)).toEqual([oauthB.id]);
    for (const q of [
      `provider_auth_credentials_id=${a.id}&provider_auth_credentials_id=${b.id}`,
      `provider_auth_credentials_id[]=${b.id}&provider_auth_credentials_id[]=${a.id}`,
      `provider_auth_credentials_id[0]=${a.id}&provider_auth_credentials_id[1]=${b.id}`,
    ]) {
      expect(await listIds(deployment.id, q), q).toEqual([oauthA.id, oauthB.id, oauthA2.id]);
    }

    // Both filters: an auth config must match both.
    expect(await listIds(deployment.id, `provider_auth_method_id=${m}&provider_auth_credentials_id=${b.id}`)).toEqual([
      oauthB.id,
    ]);
    expect(await listIds(deployment.id, `provider_auth_method_id=${tm}&provider_auth_credentials_id=${b.id}`)).toEqual(
      [],
    );
    expect(
      await listIds(
        deployment.id,
        `provider_auth_method_id[]=${m}&provider_auth_method_id[]=${tm}&provider_auth_credentials_id[]=${a.id}`,
      ),
    ).toEqual([oauthA.id, oauthA2.id]);
    const typed = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs", {
        params: {
          path: { provider_deployment_id: deployment.id },
          query: { provider_auth_method_id: [m], provider_auth_credentials_id: [a.id, b.id], order: "desc", limit: 2 },
        },
      }),
    );
    expect(typed.items.map((c) => c.id)).toEqual([oauthA2.id, oauthB.id]);
    expect(typed.pagination.has_more_after).toBe(true);

    // Ids that are not this deployment's, or unknown, match nothing.
    expect(await listIds(deployment.id, "provider_auth_method_id=pam_00000000000000000000000000")).toEqual([]);
    expect(await listIds(deployment.id, "provider_auth_credentials_id=par_00000000000000000000000000")).toEqual([]);
    const elsewhereCredentials = elsewhere.provider_auth_credentials_id ?? "";
    expect(await listIds(deployment.id, `provider_auth_credentials_id=${elsewhereCredentials}`)).toEqual([]);
  });

  it("pages through auth configs with limit, cursors, after, before and order", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id)).id);
    }
    const p = { provider_deployment_id: deployment.id };
    const list = "/provider-deployments/{provider_deployment_id}/auth-configs" as const;
    const first = await unwrap(t.client.GET(list, { params: { path: p, query: { limit: 2 } } }));
    expect(first.items.map((c) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true });
    const second = await unwrap(
      t.client.GET(list, { params: { path: p, query: { limit: 2, cursor: first.pagination.next_cursor ?? "" } } }),
    );
    expect(second.items.map((c) => c.id)).toEqual(ids.slice(2, 4));
    expect(await listIds(deployment.id, `after=${ids[3]}`)).toEqual([ids[4]]);
    expect(await listIds(deployment.id, `before=${ids[1]}`)).toEqual([ids[0]]);
    expect(await listIds(deployment.id, "order=desc")).toEqual([...ids].reverse());
    const all: string[] = [];
    for await (const c of t.client.paginate(list, { params: { path: p, query: { limit: 2 } } })) all.push(c.id);
    expect(all).toEqual(ids);
  });

  it("updates name, description and metadata; null clears each; the connection stays as it was", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const created = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id, {
      name: "Before",
      description: "Old",
      metadata: { a: 1 },
    });
    const p = params(deployment.id, created.id);

    const updated = await unwrap(
      t.client.PATCH(route, { params: p, body: { name: "After", description: "New", metadata: { b: [1, 2] } } }),
    );
    expect(updated).toEqual({
      ...created,
      name: "After",
      description: "New",
      metadata: { b: [1, 2] },
      updated_at: expect.stringMatching(ISO),
    });
    expect(updated.updated_at >= created.updated_at).toBe(true);
    expect(await getAuthConfig(t.client, deployment.id, created.id)).toEqual(updated);

    const kept = await unwrap(t.client.PATCH(route, { params: p, body: { metadata: { c: true } } }));
    expect(kept).toMatchObject({ name: "After", description: "New", metadata: { c: true } });

    const cleared = await unwrap(
      t.client.PATCH(route, { params: p, body: { name: null, description: null, metadata: null } }),
    );
    expect(cleared).toEqual({
      ...created,
      name: null,
      description: null,
      metadata: null,
      updated_at: expect.stringMatching(ISO),
    });
    expect(await getAuthConfig(t.client, deployment.id, created.id)).toEqual(cleared);

    // After an import, renaming keeps the tokens and the status.
    await importInto(t.client, deployment.id, created.id, tokenSet());
    const before = await t.db
      .selectFrom("provider_auth_configs")
      .select(["credential_ciphertext", "status", "type"])
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    const renamed = await unwrap(t.client.PATCH(route, { params: p, body: { name: "Renamed" } }));
    expect(renamed).toMatchObject({ name: "Renamed", status: "active", type: "oauth_manual" });
    const after = await t.db
      .selectFrom("provider_auth_configs")
      .select(["credential_ciphertext", "status", "type"])
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(after).toEqual(before);
  });

  it("deletes an auth config with its exports and imports, returning it as it was", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const doomed = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    const keep = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    const imported = await importInto(t.client, deployment.id, doomed.id, tokenSet());
    const exported = await exportFrom(t.client, deployment.id, doomed.id);
    const keptImport = await importInto(t.client, deployment.id, keep.id, tokenSet());
    const keptExport = await exportFrom(t.client, deployment.id, keep.id);
    const current = await getAuthConfig(t.client, deployment.id, doomed.id);
    expect(current.status).toBe("active");

    const res = await t.client.DELETE(route, { params: params(deployment.id, doomed.id) });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(current);

    const gone = await t.client.GET(route, { params: params(deployment.id, doomed.id) });
    expect(gone.response.status).toBe(404);
    expect(gone.error).toMatchObject({ code: "not_found", entity: "provider.auth_config" });
    expect(await t.db.selectFrom("provider_auth_configs").select("id").where("id", "=", doomed.id).execute()).toEqual(
      [],
    );
    expect(
      await t.db
        .selectFrom("provider_auth_imports")
        .select("id")
        .where("id", "in", [imported.id, keptImport.id])
        .execute(),
    ).toEqual([{ id: keptImport.id }]);
    expect(
      await t.db
        .selectFrom("provider_auth_exports")
        .select("id")
        .where("id", "in", [exported.id, keptExport.id])
        .execute(),
    ).toEqual([{ id: keptExport.id }]);
    const exportsGone = await t.fetch(
      `/provider-deployments/${deployment.id}/auth-configs/${doomed.id}/exports/${exported.id}`,
    );
    expect(exportsGone.status).toBe(404);
    expect(await listIds(deployment.id, "")).toEqual([keep.id]);

    const again = await t.client.DELETE(route, { params: params(deployment.id, doomed.id) });
    expect(again.response.status).toBe(404);
    // The credentials are still in use by the other auth config only.
    const refused = await t.client.DELETE(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      { params: { path: { provider_deployment_id: deployment.id, provider_auth_credentials_id: credentials.id } } },
    );
    expect(refused.response.status).toBe(409);
    expect(refused.error?.message).toContain(keep.id);
  });
});

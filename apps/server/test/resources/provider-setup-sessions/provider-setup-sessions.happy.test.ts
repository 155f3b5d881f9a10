import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { credentialAad } from "../../../src/resources/provider-auth-configs/credential-data.ts";
import { deploymentWithApp, followFlow, redirectQuery, useOAuthSetup } from "../../oauth/support.ts";

const { t, provider } = useOAuthSetup();

const create = (deploymentId: string, body: Record<string, unknown>) =>
  unwrap(
    t.client.POST("/provider-deployments/{provider_deployment_id}/setup-sessions", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { providerAuthMethodId: provider.oauthMethodId, ...body },
    }),
  );
const get = (deploymentId: string, id: string) =>
  unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/setup-sessions/{provider_setup_session_id}", {
      params: { path: { provider_deployment_id: deploymentId, provider_setup_session_id: id } },
    }),
  );
const list = (deploymentId: string, query: Record<string, unknown> = {}) =>
  unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/setup-sessions", {
      params: { path: { provider_deployment_id: deploymentId }, query },
    }),
  );

describe("provider setup sessions: an OAuth method", () => {
  it("creates a pending auth_only session from a camelCase body and completes it through the real flow", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const session = await create(app.deploymentId, {
      providerAuthCredentialsId: app.credentialsId,
      redirectUrl: "https://app.example.test/connected",
      name: "Alice",
      description: "Alice's connection",
      metadata: { user_id: "42" },
    });
    expect(session).toMatchObject({
      object: "provider.setup_session",
      type: "auth_only",
      status: "pending",
      failure_reason: null,
      name: "Alice",
      description: "Alice's connection",
      metadata: { user_id: "42" },
      provider_id: provider.providerId,
      provider_deployment_id: app.deploymentId,
      provider_auth_method_id: provider.oauthMethodId,
      redirect_url: "https://app.example.test/connected",
      auth_config: null,
      consumer_id: null,
    });
    expect(session.id).toMatch(/^pas_/);
    expect(session.url).toMatch(new RegExp(`^${t.url}/oauth/setup-sessions/${session.id}/start\\?token=`));

    const start = await fetch(session.url ?? "", { redirect: "manual" });
    expect(start.status).toBe(302);
    expect((await get(app.deploymentId, session.id)).status).toBe("in_progress");
    const authorize = await fetch(start.headers.get("location") ?? "", { redirect: "manual" });
    const callback = await fetch(authorize.headers.get("location") ?? "", { redirect: "manual" });
    const outcome = redirectQuery(callback);
    expect(outcome).toMatchObject({ provider_setup_session_id: session.id, status: "completed" });

    const done = await get(app.deploymentId, session.id);
    expect(done).toMatchObject({
      status: "completed",
      url: null,
      auth_config: {
        id: outcome.provider_auth_config_id,
        type: "oauth_automated",
        status: "active",
        name: "Alice",
        metadata: { user_id: "42" },
      },
    });
  });

  it("lists with auth method and status filters, counting sessions past expires_at as expired", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const pending = await create(app.deploymentId, {});
    const expiring = await create(app.deploymentId, {});
    const completed = await create(app.deploymentId, {});
    const token = await create(app.deploymentId, { providerAuthMethodId: provider.tokenMethodId });
    await followFlow(completed.url ?? "");
    await t.db
      .updateTable("oauth_flows")
      .set({ expires_at: new Date(Date.now() - 1) })
      .where("id", "=", expiring.id)
      .execute();
    const ids = async (query: Record<string, unknown>) => (await list(app.deploymentId, query)).items.map((s) => s.id);
    expect(await ids({})).toEqual([pending.id, expiring.id, completed.id, token.id]);
    expect(await ids({ status: "pending" })).toEqual([pending.id, token.id]);
    expect(await ids({ status: "expired" })).toEqual([expiring.id]);
    expect(await ids({ status: "completed" })).toEqual([completed.id]);
    expect(await ids({ provider_auth_method_id: [provider.tokenMethodId] })).toEqual([token.id]);
    expect((await list(app.deploymentId, { status: "expired" })).items[0]).toMatchObject({
      status: "expired",
      url: null,
      failure_reason: expect.stringContaining("expired"),
    });
  });

  it("updates name, description and metadata; delete returns the session and its link stops working", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const session = await create(app.deploymentId, { name: "old" });
    const updated = await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}/setup-sessions/{provider_setup_session_id}", {
        params: { path: { provider_deployment_id: app.deploymentId, provider_setup_session_id: session.id } },
        body: { name: null, metadata: { a: "b" } },
      }),
    );
    expect(updated).toMatchObject({ name: null, metadata: { a: "b" } });
    const deleted = await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/setup-sessions/{provider_setup_session_id}", {
        params: { path: { provider_deployment_id: app.deploymentId, provider_setup_session_id: session.id } },
      }),
    );
    expect(deleted).toEqual(updated);
    const visit = await fetch(session.url ?? "", { redirect: "manual" });
    expect(visit.status).toBe(404);
  });
});

describe("provider setup sessions: a token method", () => {
  it("shows a form built from the input schema and stores the entered token encrypted as a manual auth config", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const session = await create(app.deploymentId, {
      providerAuthMethodId: provider.tokenMethodId,
      redirectUrl: "https://app.example.test/connected",
    });
    const form = await fetch(session.url ?? "");
    expect(form.status).toBe(200);
    const html = await form.text();
    expect(html).toContain('name="api_key"');
    expect(html).toContain("Your API key");
    expect((await get(app.deploymentId, session.id)).status).toBe("in_progress");
    const apiKey = "sk-entered-by-the-user-123";
    const submit = await fetch(session.url ?? "", {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ api_key: apiKey }),
    });
    expect(submit.status).toBe(302);
    const outcome = redirectQuery(submit);
    expect(outcome.status).toBe("completed");
    const done = await get(app.deploymentId, session.id);
    expect(done.auth_config).toMatchObject({ type: "manual", status: "active" });
    const row = await t.db
      .selectFrom("provider_auth_configs")
      .selectAll()
      .where("id", "=", outcome.provider_auth_config_id ?? "")
      .executeTakeFirstOrThrow();
    expect(row.provider_auth_credentials_id).toBeNull();
    expect(JSON.parse(t.secrets.decrypt(row.credential_ciphertext ?? "", credentialAad(row.id)))).toEqual({
      kind: "manual",
      values: { api_key: apiKey },
    });
  });

  it("an invalid entered token fails the session without echoing it", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const session = await create(app.deploymentId, { providerAuthMethodId: provider.tokenMethodId });
    const submit = await fetch(session.url ?? "", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ api_key: "short" }),
    });
    expect(submit.status).toBe(400);
    const page = await submit.text();
    expect(page).toContain("not valid");
    expect(page).not.toContain("short");
    expect(await get(app.deploymentId, session.id)).toMatchObject({ status: "failed", auth_config: null });
  });
});

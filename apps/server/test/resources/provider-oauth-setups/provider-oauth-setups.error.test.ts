import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { deploymentWithApp, followFlow, redirectQuery, useOAuthSetup } from "../../oauth/support.ts";

const { t, oauth, provider } = useOAuthSetup();

const REDIRECT = "https://app.example.test/done";

const create = (deploymentId: string, body: Record<string, unknown>) =>
  t.fetch(`/provider-deployments/${deploymentId}/oauth-setups`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "s", config: {}, ...body }),
  });

async function setup(deploymentId: string, body: Record<string, unknown> = {}) {
  const res = await create(deploymentId, body);
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; url: string };
}

const getSetup = (deploymentId: string, id: string) =>
  unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/oauth-setups/{provider_oauth_setup_id}", {
      params: { path: { provider_deployment_id: deploymentId, provider_oauth_setup_id: id } },
    }),
  );

const authConfigCount = async (deploymentId: string) =>
  Number(
    (
      await t.db
        .selectFrom("provider_auth_configs")
        .select(t.db.fn.countAll<string>().as("n"))
        .where("provider_deployment_id", "=", deploymentId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe("provider OAuth setups: bad requests", () => {
  it("rejects reserved authorize parameters, token methods and missing credentials with 400s that name the field", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const reserved = await create(app.deploymentId, {
      config: { extra_authorize_params: { state: "x", prompt: "y" } },
    });
    expect(reserved.status).toBe(400);
    expect(await reserved.json()).toMatchObject({
      code: "invalid_data",
      errors: [{ path: ["config", "extra_authorize_params", "state"] }],
    });
    const token = await create(app.deploymentId, { provider_auth_method_id: provider.tokenMethodId });
    expect(token.status).toBe(400);
    expect(await token.json()).toMatchObject({ errors: [{ path: ["provider_auth_method_id"] }] });
    const bare = unwrap(
      t.client.POST("/provider-deployments", { body: { name: "no app", provider_id: provider.providerId } }),
    );
    const noCredentials = await create((await bare).id, {});
    expect(noCredentials.status).toBe(400);
    expect(await noCredentials.json()).toMatchObject({ errors: [{ path: ["provider_auth_credentials_id"] }] });
    const unknownField = await create(app.deploymentId, { config: { scope: "x" } });
    expect(unknownField.status).toBe(400);
    const badRedirect = await create(app.deploymentId, { redirect_url: "javascript:alert(1)" });
    expect(badRedirect.status).toBe(400);
  });

  it("answers 404 for unknown deployments, credentials, methods and setups, and another deployment's credentials", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const other = await deploymentWithApp(t.client, provider.providerId);
    expect((await create("pde_unknown", {})).status).toBe(404);
    expect((await create(app.deploymentId, { provider_auth_credentials_id: other.credentialsId })).status).toBe(404);
    expect((await create(app.deploymentId, { provider_auth_method_id: "pam_unknown" })).status).toBe(404);
    const res = await t.fetch(`/provider-deployments/${app.deploymentId}/oauth-setups/poas_unknown`);
    expect(res.status).toBe(404);
    const s = await setup(app.deploymentId);
    expect((await t.fetch(`/provider-deployments/${other.deploymentId}/oauth-setups/${s.id}`)).status).toBe(404);
  });
});

describe("provider OAuth setups: failed flows", () => {
  it("denied consent: the setup fails, the user is sent back with the error, no auth config is created", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId, { redirect_url: REDIRECT });
    const flow = await followFlow(s.url, {
      beforeCallback: (callback) => {
        // What a provider sends when the user clicks "Deny".
        callback.searchParams.delete("code");
        callback.searchParams.set("error", "access_denied");
      },
    });
    expect(flow.callback.status).toBe(302);
    expect(flow.callback.headers.get("location")?.startsWith(`${REDIRECT}?`)).toBe(true);
    expect(redirectQuery(flow.callback)).toEqual({
      provider_oauth_setup_id: s.id,
      status: "failed",
      error: "access_denied",
      error_description: "The user denied consent (access_denied).",
    });
    expect(await getSetup(app.deploymentId, s.id)).toMatchObject({
      status: "failed",
      failure_reason: "The user denied consent (access_denied).",
      url: null,
      auth_config: null,
    });
    expect(await authConfigCount(app.deploymentId)).toBe(0);
  });

  it("shows its own page with the reason when there is no redirect_url", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId);
    const flow = await followFlow(s.url, {
      beforeCallback: (callback) => {
        callback.searchParams.delete("code");
        callback.searchParams.set("error", "access_denied");
      },
    });
    expect(flow.callback.status).toBe(400);
    expect(flow.callback.headers.get("content-type")).toMatch(/text\/html/);
    expect(await flow.callback.text()).toContain("The user denied consent (access_denied).");
  });

  it("a token endpoint error fails the setup with the provider's error code", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId, { redirect_url: REDIRECT });
    oauth.failNextToken(400, "invalid_grant");
    const flow = await followFlow(s.url);
    expect(redirectQuery(flow.callback)).toMatchObject({ status: "failed", error: "invalid_grant" });
    const failed = await getSetup(app.deploymentId, s.id);
    expect(failed.status).toBe("failed");
    expect(failed.failure_reason).toBe(
      "The provider did not issue tokens: The provider's token endpoint answered 400 (invalid_grant).",
    );
    expect(await authConfigCount(app.deploymentId)).toBe(0);
  });

  it("a wrong state fails the setup this browser started; an unknown state without the cookie only shows a page", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId, { redirect_url: REDIRECT });
    const flow = await followFlow(s.url, {
      beforeCallback: (callback) => callback.searchParams.set("state", "forged-state-value"),
    });
    expect(redirectQuery(flow.callback)).toMatchObject({ status: "failed", error: "invalid_state" });
    expect((await getSetup(app.deploymentId, s.id)).status).toBe("failed");

    const anonymous = await fetch(`${t.url}/oauth/callback?code=abc&state=nope`, { redirect: "manual" });
    expect(anonymous.status).toBe(400);
    expect(await anonymous.text()).toContain("does not belong to a setup in progress");
    const missing = await fetch(`${t.url}/oauth/callback?code=abc`, { redirect: "manual" });
    expect(missing.status).toBe(400);
  });

  it("a replayed callback is refused and changes nothing", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId, { redirect_url: REDIRECT });
    const flow = await followFlow(s.url);
    expect(redirectQuery(flow.callback).status).toBe("completed");
    const tokenCalls = oauth.tokenRequests.length;
    const replay = await fetch(flow.callbackUrl, { redirect: "manual", headers: { cookie: flow.cookie } });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain("already used");
    expect(oauth.tokenRequests.length).toBe(tokenCalls);
    expect((await getSetup(app.deploymentId, s.id)).status).toBe("completed");
    expect(await authConfigCount(app.deploymentId)).toBe(1);
  });

  it("two concurrent callbacks with one state exchange the code once", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId, { redirect_url: REDIRECT });
    const start = await fetch(s.url, { redirect: "manual" });
    const authorize = await fetch(start.headers.get("location") ?? "", { redirect: "manual" });
    const callbackUrl = new URL(authorize.headers.get("location") ?? "");
    const results = await Promise.all([1, 2, 3].map(() => fetch(callbackUrl, { redirect: "manual" })));
    expect(results.filter((r) => r.status === 302)).toHaveLength(1);
    expect(await authConfigCount(app.deploymentId)).toBe(1);
  });

  it("past expires_at the setup reads as expired, its link shows an expired page and the callback fails", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const unopened = await setup(app.deploymentId);
    const opened = await setup(app.deploymentId, { redirect_url: REDIRECT });
    const start = await fetch(opened.url, { redirect: "manual" });
    const authorize = await fetch(start.headers.get("location") ?? "", { redirect: "manual" });
    await t.db
      .updateTable("oauth_flows")
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where("id", "in", [unopened.id, opened.id])
      .execute();
    expect(await getSetup(app.deploymentId, unopened.id)).toMatchObject({ status: "expired", url: null });
    const visit = await fetch(unopened.url, { redirect: "manual" });
    expect(visit.status).toBe(400);
    expect(await visit.text()).toContain("expired");
    const callback = await fetch(authorize.headers.get("location") ?? "", { redirect: "manual" });
    expect(redirectQuery(callback)).toMatchObject({ status: "failed", error: "expired" });
    expect((await getSetup(app.deploymentId, opened.id)).status).toBe("expired");
    const again = await fetch(unopened.url, { redirect: "manual" });
    expect(again.status).toBe(410);
    expect(await authConfigCount(app.deploymentId)).toBe(0);
  });

  it("an ephemeral setup that fails is deleted", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const s = await setup(app.deploymentId, { is_ephemeral: true });
    await followFlow(s.url, {
      beforeCallback: (callback) => {
        callback.searchParams.delete("code");
        callback.searchParams.set("error", "access_denied");
      },
    });
    const res = await t.fetch(`/provider-deployments/${app.deploymentId}/oauth-setups/${s.id}`);
    expect(res.status).toBe(404);
  });
});

import { createHash } from "node:crypto";
import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { credentialAad } from "../../../src/resources/provider-auth-configs/credential-data.ts";
import { deploymentWithApp, followFlow, RESOURCE, redirectQuery, useOAuthSetup } from "../../oauth/support.ts";

const { t, oauth, provider } = useOAuthSetup();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function createSetup(deploymentId: string, body: Record<string, unknown> = {}) {
  return unwrap(
    t.client.POST("/provider-deployments/{provider_deployment_id}/oauth-setups", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name: "Alice's files", config: {}, ...body },
    }),
  );
}

const getSetup = (deploymentId: string, id: string) =>
  unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/oauth-setups/{provider_oauth_setup_id}", {
      params: { path: { provider_deployment_id: deploymentId, provider_oauth_setup_id: id } },
    }),
  );

describe("provider OAuth setups: create, read, update", () => {
  it("creates an unused setup with its link, embedded credentials, method and deployment, and no upstream call", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const before = oauth.tokenRequests.length;
    const setup = await createSetup(app.deploymentId, {
      description: "files for Alice",
      metadata: { user: "alice" },
      redirect_url: "https://app.example.test/done?keep=1",
    });
    expect(setup).toMatchObject({
      object: "provider.oauth_setup",
      status: "unused",
      failure_reason: null,
      is_ephemeral: false,
      provider_id: provider.providerId,
      name: "Alice's files",
      description: "files for Alice",
      metadata: { user: "alice" },
      redirect_url: "https://app.example.test/done?keep=1",
      auth_config: null,
      credentials: { object: "provider.auth_credentials", id: app.credentialsId, client_id: app.clientId },
      auth_method: {
        object: "provider.auth_method",
        id: provider.oauthMethodId,
        type: "oauth",
        scopes: [
          expect.objectContaining({ object: "provider.auth_method.scope", scope: "files.read" }),
          expect.objectContaining({ scope: "files.write" }),
        ],
      },
      deployment: { object: "provider.deployment#preview", id: app.deploymentId, name: "Example" },
    });
    expect(setup.id).toMatch(/^poas_/);
    expect(setup.url).toMatch(new RegExp(`^${t.url}/oauth/setups/${setup.id}/start\\?token=[\\w-]{43}$`));
    expect(setup.created_at).toMatch(ISO);
    expect(Date.parse(setup.expires_at ?? "") - Date.parse(setup.created_at)).toBe(3_600_000);
    expect(oauth.tokenRequests.length).toBe(before);
    expect(await getSetup(app.deploymentId, setup.id)).toEqual(setup);
  });

  it("lists oldest first with pagination, and updates name, description and metadata", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const a = await createSetup(app.deploymentId, { name: "a" });
    const b = await createSetup(app.deploymentId, { name: "b" });
    const page = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/oauth-setups", {
        params: { path: { provider_deployment_id: app.deploymentId }, query: { limit: 1 } },
      }),
    );
    expect(page.items.map((s) => s.id)).toEqual([a.id]);
    expect(page.pagination.has_more_after).toBe(true);
    const desc = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/oauth-setups", {
        params: { path: { provider_deployment_id: app.deploymentId }, query: { order: "desc" } },
      }),
    );
    expect(desc.items.map((s) => s.id)).toEqual([b.id, a.id]);
    const updated = await unwrap(
      t.client.PATCH("/provider-deployments/{provider_deployment_id}/oauth-setups/{provider_oauth_setup_id}", {
        params: { path: { provider_deployment_id: app.deploymentId, provider_oauth_setup_id: a.id } },
        body: { name: "renamed", metadata: null, description: "d" },
      }),
    );
    expect(updated).toMatchObject({ id: a.id, name: "renamed", metadata: null, description: "d", url: a.url });
  });
});

describe("provider OAuth setups: the authorization-code flow with PKCE against a real OAuth server", () => {
  it("redirects to the authorize endpoint with state, S256 challenge, scopes, resource and extra params", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const setup = await createSetup(app.deploymentId, {
      config: { scopes: ["files.read"], extra_authorize_params: { login_hint: "alice@example.test" } },
      redirect_url: "https://app.example.test/done",
    });
    const flow = await followFlow(setup.url ?? "");
    const q = Object.fromEntries(flow.authorizeUrl.searchParams);
    expect(`${flow.authorizeUrl.origin}${flow.authorizeUrl.pathname}`).toBe(oauth.authorizationEndpoint);
    expect(q).toMatchObject({
      response_type: "code",
      client_id: app.clientId,
      redirect_uri: `${t.url}/oauth/callback`,
      scope: "files.read",
      code_challenge_method: "S256",
      access_type: "offline",
      prompt: "consent",
      resource: RESOURCE,
      login_hint: "alice@example.test",
    });
    expect(q.state).toMatch(/^[\w-]{43}$/);
    expect(q.code_challenge).toMatch(/^[\w-]{43}$/);
    expect(flow.start.headers.get("set-cookie")).toMatch(/HttpOnly; SameSite=Lax/);

    // The token request carried the client secret and the verifier whose S256 is the challenge.
    const tokenRequest = oauth.tokenRequests.at(-1) ?? {};
    expect(tokenRequest).toMatchObject({
      grant_type: "authorization_code",
      client_id: app.clientId,
      client_secret: app.clientSecret,
      redirect_uri: `${t.url}/oauth/callback`,
      resource: RESOURCE,
    });
    expect(
      createHash("sha256")
        .update(tokenRequest.code_verifier ?? "")
        .digest("base64url"),
    ).toBe(q.code_challenge);

    // Back to the app with the outcome.
    expect(flow.callback.status).toBe(302);
    const outcome = redirectQuery(flow.callback);
    expect(outcome).toMatchObject({ provider_oauth_setup_id: setup.id, status: "completed" });
    expect(outcome.provider_auth_config_id).toMatch(/^pac_/);

    const done = await getSetup(app.deploymentId, setup.id);
    expect(done).toMatchObject({
      status: "completed",
      url: null,
      failure_reason: null,
      auth_config: {
        object: "provider.auth_config",
        id: outcome.provider_auth_config_id,
        status: "active",
        type: "oauth_automated",
        name: "Alice's files",
        provider_deployment_id: app.deploymentId,
        provider_auth_method_id: provider.oauthMethodId,
      },
    });
    // The tokens the server issued are stored, encrypted, as the auth config's credentials.
    const row = await t.db
      .selectFrom("provider_auth_configs")
      .selectAll()
      .where("id", "=", outcome.provider_auth_config_id ?? "")
      .executeTakeFirstOrThrow();
    const issued = oauth.issued.at(-1) ?? {};
    expect(row.credential_ciphertext).not.toContain(String(issued.access_token));
    const stored = JSON.parse(t.secrets.decrypt(row.credential_ciphertext ?? "", credentialAad(row.id)));
    expect(stored).toMatchObject({
      kind: "oauth",
      access_token: issued.access_token,
      refresh_token: issued.refresh_token,
      token_type: "Bearer",
    });
    expect(row.provider_auth_credentials_id).toBe(app.credentialsId);
  });

  it("marks the setup opened on the first visit, and a second visit starts over with a fresh state", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const setup = await createSetup(app.deploymentId);
    const first = await fetch(setup.url ?? "", { redirect: "manual" });
    expect(first.status).toBe(302);
    expect((await getSetup(app.deploymentId, setup.id)).status).toBe("opened");
    const second = await fetch(setup.url ?? "", { redirect: "manual" });
    const state1 = new URL(first.headers.get("location") ?? "").searchParams.get("state");
    const authorize2 = new URL(second.headers.get("location") ?? "");
    expect(authorize2.searchParams.get("state")).not.toBe(state1);
    // Default scopes: the method's, space-separated.
    expect(authorize2.searchParams.get("scope")).toBe("files.read files.write");
    // The first attempt's state no longer works; the second completes.
    const stale = await fetch(`${t.url}/oauth/callback?code=x&state=${state1}`, { redirect: "manual" });
    expect(stale.status).toBe(400);
    const authorize = await fetch(authorize2, { redirect: "manual" });
    const callback = await fetch(authorize.headers.get("location") ?? "", { redirect: "manual" });
    expect(callback.status).toBe(200);
    expect(await callback.text()).toContain("You are connected");
    expect((await getSetup(app.deploymentId, setup.id)).status).toBe("completed");
  });

  it("uses the credentials' scopes when the setup names none", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const credentials = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: app.deploymentId } },
        body: {
          name: "scoped",
          config: { type: "oauth", clientId: "scoped-app", clientSecret: "s3cret-scoped", scopes: ["custom.scope"] },
        },
      }),
    );
    const setup = await createSetup(app.deploymentId, { provider_auth_credentials_id: credentials.id });
    const start = await fetch(setup.url ?? "", { redirect: "manual" });
    const authorize = new URL(start.headers.get("location") ?? "");
    expect(authorize.searchParams.get("scope")).toBe("custom.scope");
    expect(authorize.searchParams.get("client_id")).toBe("scoped-app");
  });

  it("deletes an ephemeral setup once it completes; the auth config stays", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const setup = await createSetup(app.deploymentId, {
      is_ephemeral: true,
      redirect_url: "https://app.example.test/x",
    });
    expect(setup.is_ephemeral).toBe(true);
    const flow = await followFlow(setup.url ?? "");
    const outcome = redirectQuery(flow.callback);
    expect(outcome.status).toBe("completed");
    const gone = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/oauth-setups/{provider_oauth_setup_id}",
      { params: { path: { provider_deployment_id: app.deploymentId, provider_oauth_setup_id: setup.id } } },
    );
    expect(gone.response.status).toBe(404);
    const config = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}",
      {
        params: {
          path: {
            provider_deployment_id: app.deploymentId,
            provider_auth_config_id: outcome.provider_auth_config_id ?? "",
          },
        },
      },
    );
    expect(config.response.status).toBe(200);
  });
});

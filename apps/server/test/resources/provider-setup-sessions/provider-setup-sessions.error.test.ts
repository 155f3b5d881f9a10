import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deploymentWithApp,
  loadOAuthProvider,
  type OAuthProvider,
  type OAuthServer,
  type OAuthTestServer,
  startOAuthServer,
  startOAuthTestServer,
} from "../../oauth/support.ts";

let t: OAuthTestServer;
let oauth: OAuthServer;
let provider: OAuthProvider;
let otherProvider: OAuthProvider;
beforeAll(async () => {
  [t, oauth] = await Promise.all([startOAuthTestServer(), startOAuthServer()]);
  provider = await loadOAuthProvider(t.db, oauth);
  otherProvider = await loadOAuthProvider(t.db, oauth);
});
afterAll(async () => {
  await oauth.close();
  await t.close();
});

const create = (deploymentId: string, body: Record<string, unknown>) =>
  t.fetch(`/provider-deployments/${deploymentId}/setup-sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("provider setup sessions: bad requests", () => {
  it("400s: snake_case or missing method, credentials with a token method, an OAuth method without credentials", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const snake = await create(app.deploymentId, { provider_auth_method_id: provider.oauthMethodId });
    expect(snake.status).toBe(400);
    expect(await snake.json()).toMatchObject({ code: "invalid_data", entity: "body" });
    const withCredentials = await create(app.deploymentId, {
      providerAuthMethodId: provider.tokenMethodId,
      providerAuthCredentialsId: app.credentialsId,
    });
    expect(withCredentials.status).toBe(400);
    expect(await withCredentials.json()).toMatchObject({ errors: [{ path: ["providerAuthCredentialsId"] }] });
    const bare = await t.client.POST("/provider-deployments", {
      body: { name: "no app", provider_id: provider.providerId },
    });
    const noApp = await create(bare.data?.id ?? "", { providerAuthMethodId: provider.oauthMethodId });
    expect(noApp.status).toBe(400);
    expect(await noApp.json()).toMatchObject({ errors: [{ path: ["providerAuthCredentialsId"] }] });
    // A token method needs no OAuth app.
    expect((await create(bare.data?.id ?? "", { providerAuthMethodId: provider.tokenMethodId })).status).toBe(201);
    const badStatus = await t.fetch(`/provider-deployments/${app.deploymentId}/setup-sessions?status=done`);
    expect(badStatus.status).toBe(400);
  });

  it("404s: unknown deployment, another provider's method, another deployment's credentials, unknown session", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const other = await deploymentWithApp(t.client, provider.providerId);
    expect((await create("pde_nope", { providerAuthMethodId: provider.oauthMethodId })).status).toBe(404);
    const foreignMethod = await create(app.deploymentId, { providerAuthMethodId: otherProvider.oauthMethodId });
    expect(foreignMethod.status).toBe(404);
    const foreignCredentials = await create(app.deploymentId, {
      providerAuthMethodId: provider.oauthMethodId,
      providerAuthCredentialsId: other.credentialsId,
    });
    expect(foreignCredentials.status).toBe(404);
    for (const method of ["GET", "PATCH", "DELETE"]) {
      const res = await t.fetch(`/provider-deployments/${app.deploymentId}/setup-sessions/pas_nope`, {
        method,
        ...(method === "PATCH" ? { headers: { "content-type": "application/json" }, body: "{}" } : {}),
      });
      expect(res.status).toBe(404);
    }
    const session = (await (
      await create(app.deploymentId, { providerAuthMethodId: provider.oauthMethodId })
    ).json()) as { id: string };
    const viaOther = await t.fetch(`/provider-deployments/${other.deploymentId}/setup-sessions/${session.id}`);
    expect(viaOther.status).toBe(404);
  });
});

import { ApiError } from "@toolplane/server-stubs";
import { describe, expect, it } from "vitest";
import { UpstreamCredentials } from "../../src/oauth/upstream-credentials.ts";
import { credentialAad } from "../../src/resources/provider-auth-configs/credential-data.ts";
import { deploymentWithApp, followFlow, redirectQuery, useOAuthSetup } from "./support.ts";

/**
 * The token lifecycle against a real OAuth server: connections are made through the real flow, with the
 * server told to issue short-lived access tokens where a test needs one that is about to expire.
 */
const { t, oauth, provider } = useOAuthSetup();

/** An auth config made by a completed OAuth setup whose access token expires in `expiresIn` seconds. */
async function connection(expiresIn: number) {
  const app = await deploymentWithApp(t.client, provider.providerId);
  const setup = await t.client.POST("/provider-deployments/{provider_deployment_id}/oauth-setups", {
    params: { path: { provider_deployment_id: app.deploymentId } },
    body: { name: "conn", config: {}, redirect_url: "https://app.example.test/done" },
  });
  oauth.expireNextTokenIn(expiresIn);
  const flow = await followFlow(setup.data?.url ?? "");
  const authConfigId = redirectQuery(flow.callback).provider_auth_config_id ?? "";
  expect(authConfigId).toMatch(/^pac_/);
  return { ...app, authConfigId, issued: oauth.issued.at(-1) ?? {} };
}

const stored = async (id: string) => {
  const row = await t.db.selectFrom("provider_auth_configs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  return { row, data: JSON.parse(t.secrets.decrypt(row.credential_ciphertext ?? "", credentialAad(id))) };
};

/** The app's real dependencies (its database and secret box), as the gateway builds it. */
const upstreamCredentials = () => new UpstreamCredentials({ db: t.db, secrets: t.secrets });

const refreshCount = () => oauth.tokenRequests.filter((r) => r.grant_type === "refresh_token").length;

describe("upstream credentials: token lifecycle", () => {
  it("returns a token with time left as it is, without calling the token endpoint", async () => {
    const c = await connection(3600);
    const before = refreshCount();
    const credential = await upstreamCredentials().credentialFor(t.tenant.instanceId, c.authConfigId);
    expect(credential).toEqual({ kind: "oauth", accessToken: c.issued.access_token, tokenType: "Bearer" });
    expect(refreshCount()).toBe(before);
  });

  it("refreshes a token about to expire once for many concurrent callers, across two instances, and stores it encrypted", async () => {
    const c = await connection(30);
    const before = refreshCount();
    // Two UpstreamCredentials stand for two processes: in-process single-flight plus the row lock.
    const a = upstreamCredentials();
    const b = upstreamCredentials();
    const results = await Promise.all([
      ...Array.from({ length: 5 }, () => a.credentialFor(t.tenant.instanceId, c.authConfigId)),
      ...Array.from({ length: 5 }, () => b.credentialFor(t.tenant.instanceId, c.authConfigId)),
    ]);
    expect(refreshCount()).toBe(before + 1);
    const refreshed = oauth.issued.at(-1) ?? {};
    expect(refreshed.access_token).not.toBe(c.issued.access_token);
    expect(refreshed.refresh_token).not.toBe(c.issued.refresh_token);
    for (const r of results)
      expect(r).toEqual({ kind: "oauth", accessToken: refreshed.access_token, tokenType: "Bearer" });
    const request = oauth.tokenRequests.at(-1) ?? {};
    expect(request).toMatchObject({
      grant_type: "refresh_token",
      refresh_token: c.issued.refresh_token,
      client_id: c.clientId,
      client_secret: c.clientSecret,
    });
    const { row, data } = await stored(c.authConfigId);
    expect(row.status).toBe("active");
    expect(data).toMatchObject({ access_token: refreshed.access_token, refresh_token: refreshed.refresh_token });
    expect(row.credential_ciphertext).not.toContain(String(refreshed.access_token));
    expect(row.expires_at?.getTime()).toBeGreaterThan(Date.now() + 60_000);
  });

  it("fails closed when the refresh is refused: clear error, auth config refresh_failed with the reason", async () => {
    const c = await connection(10);
    oauth.failNextToken(400, "invalid_grant");
    const upstream = upstreamCredentials();
    const error = await upstream.credentialFor(t.tenant.instanceId, c.authConfigId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("bad_gateway");
    expect((error as ApiError).message).toBe(
      `The access token of auth config ${c.authConfigId} could not be refreshed: The provider's token endpoint answered 400 (invalid_grant).`,
    );
    expect((error as ApiError).message).not.toContain(String(c.issued.refresh_token));
    const config = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}",
      {
        params: { path: { provider_deployment_id: c.deploymentId, provider_auth_config_id: c.authConfigId } },
      },
    );
    expect(config.data).toMatchObject({
      status: "refresh_failed",
      status_reason: "The provider's token endpoint answered 400 (invalid_grant).",
    });
    // Later calls keep failing closed, without another upstream call.
    const before = refreshCount();
    await expect(upstream.credentialFor(t.tenant.instanceId, c.authConfigId)).rejects.toMatchObject({
      code: "conflict",
    });
    expect(refreshCount()).toBe(before);
  });

  it("keeps the auth config active when the token endpoint fails for now (503): the current token serves while it lasts, the next call refreshes", async () => {
    const c = await connection(30);
    const before = refreshCount();
    oauth.failNextToken(503, "temporarily_unavailable");
    const upstream = upstreamCredentials();
    expect(await upstream.credentialFor(t.tenant.instanceId, c.authConfigId)).toEqual({
      kind: "oauth",
      accessToken: c.issued.access_token,
      tokenType: "Bearer",
    });
    expect((await stored(c.authConfigId)).row.status).toBe("active");
    // Once the token has expired, a failure of the moment is an error to retry, and still changes nothing stored.
    const later = new UpstreamCredentials({
      db: t.db,
      secrets: t.secrets,
      now: () => new Date(Date.now() + 3_600_000),
    });
    oauth.failNextToken(500, "server_error");
    await expect(later.credentialFor(t.tenant.instanceId, c.authConfigId)).rejects.toMatchObject({
      code: "service_unavailable",
    });
    expect((await stored(c.authConfigId)).row).toMatchObject({ status: "active", status_reason: null });
    // The authorization server is back: the next call refreshes.
    const refreshed = await upstream.credentialFor(t.tenant.instanceId, c.authConfigId);
    expect(refreshCount()).toBe(before + 3);
    expect(refreshed).toEqual({ kind: "oauth", accessToken: oauth.issued.at(-1)?.access_token, tokenType: "Bearer" });
  });

  it("an expired token without a refresh token marks the auth config expired", async () => {
    const c = await connection(3600);
    const { data } = await stored(c.authConfigId);
    // An imported token set without a refresh token that has just expired.
    const imported = await t.client.POST(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports",
      {
        params: { path: { provider_deployment_id: c.deploymentId, provider_auth_config_id: c.authConfigId } },
        body: {
          note: "short-lived",
          value: { access_token: data.access_token, expires_at: new Date(Date.now() + 20_000).toISOString() },
        },
      },
    );
    expect(imported.response.status).toBe(201);
    const error = await upstreamCredentials()
      .credentialFor(t.tenant.instanceId, c.authConfigId)
      .catch((e) => e);
    expect(error).toMatchObject({ code: "conflict" });
    expect((await stored(c.authConfigId)).row).toMatchObject({
      status: "expired",
      status_reason: "The access token expired and there is no refresh token to renew it.",
    });
  });

  it("another instance's auth config is not found", async () => {
    const c = await connection(3600);
    const other = await t.createTenant("other");
    await expect(upstreamCredentials().credentialFor(other.instanceId, c.authConfigId)).rejects.toMatchObject({
      code: "not_found",
    });
  });
});

import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { UpstreamCredentials } from "../../src/oauth/upstream-credentials.ts";
import { dumpAllTables } from "../support/catalog-fixtures.ts";
import { deploymentWithApp, followFlow, redirectQuery, useOAuthSetup } from "./support.ts";

/** OAuth setups, setup sessions and token imports: tenancy, authentication, and secrets kept secret. */
const { t, oauth, provider } = useOAuthSetup();

/** A response body as the fields a test reads. */
type Body = { id: string; url: string; items: unknown[]; id_token: string | null; auth_config: { id: string } };
const body = async (res: Response) => (await res.json()) as Body;

const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

describe("OAuth resources: authentication and tenancy", () => {
  it("answers 401 without an API key on every operation", async () => {
    const paths: [string, string][] = [
      ["GET", "/provider-deployments/pde_x/oauth-setups"],
      ["POST", "/provider-deployments/pde_x/oauth-setups"],
      ["GET", "/provider-deployments/pde_x/oauth-setups/poas_x"],
      ["PATCH", "/provider-deployments/pde_x/oauth-setups/poas_x"],
      ["GET", "/provider-deployments/pde_x/setup-sessions"],
      ["POST", "/provider-deployments/pde_x/setup-sessions"],
      ["GET", "/provider-deployments/pde_x/setup-sessions/pas_x"],
      ["PATCH", "/provider-deployments/pde_x/setup-sessions/pas_x"],
      ["DELETE", "/provider-deployments/pde_x/setup-sessions/pas_x"],
      ["GET", "/provider-oauth/token-imports"],
      ["POST", "/provider-oauth/token-imports"],
      ["GET", "/provider-oauth/token-imports/poti_x"],
      ["PATCH", "/provider-oauth/token-imports/poti_x"],
    ];
    for (const [method, path] of paths) {
      const res = await t.fetch(path, {
        ...json(method, {}),
        ...(method === "GET" || method === "DELETE" ? { body: null } : {}),
        auth: false,
      });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it("another tenant's setups, sessions and imports are 404, and so are their setup links without the token", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const setup = await t.client.POST("/provider-deployments/{provider_deployment_id}/oauth-setups", {
      params: { path: { provider_deployment_id: app.deploymentId } },
      body: { name: "mine", config: {} },
    });
    const session = await t.client.POST("/provider-deployments/{provider_deployment_id}/setup-sessions", {
      params: { path: { provider_deployment_id: app.deploymentId } },
      body: { providerAuthMethodId: provider.oauthMethodId },
    });
    const imported = await t.client.POST("/provider-oauth/token-imports", {
      body: { access_token: "tok-123", server_deployment_id: app.deploymentId },
    });
    const other = await t.createTenant("other");
    const as = (path: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${other.apiKey}`);
      return fetch(`${t.url}${path}`, { ...init, headers });
    };
    const dep = `/provider-deployments/${app.deploymentId}`;
    expect((await as(`${dep}/oauth-setups`)).status).toBe(404);
    expect((await as(`${dep}/oauth-setups/${setup.data?.id}`)).status).toBe(404);
    expect((await as(`${dep}/oauth-setups/${setup.data?.id}`, json("PATCH", { name: "x" }))).status).toBe(404);
    expect((await as(`${dep}/oauth-setups`, json("POST", { name: "x", config: {} }))).status).toBe(404);
    expect((await as(`${dep}/setup-sessions`)).status).toBe(404);
    expect((await as(`${dep}/setup-sessions/${session.data?.id}`)).status).toBe(404);
    expect((await as(`${dep}/setup-sessions/${session.data?.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await as(`/provider-oauth/token-imports/${imported.data?.id}`)).status).toBe(404);
    expect((await as(`/provider-oauth/token-imports/${imported.data?.id}`, json("PATCH", { note: "x" }))).status).toBe(
      404,
    );
    expect(
      (
        await as(
          "/provider-oauth/token-imports",
          json("POST", { access_token: "a", connection_id: imported.data?.connection_id }),
        )
      ).status,
    ).toBe(404);
    expect((await body(await as("/provider-oauth/token-imports"))).items).toEqual([]);

    // The setup link works only with its token: a wrong or missing token looks exactly like an unknown id.
    const link = new URL(setup.data?.url ?? "");
    const unknown = await fetch(`${t.url}/oauth/setups/poas_unknown/start?token=x`, { redirect: "manual" });
    link.searchParams.set("token", randomBytes(32).toString("base64url"));
    const wrong = await fetch(link, { redirect: "manual" });
    link.searchParams.delete("token");
    const missing = await fetch(link, { redirect: "manual" });
    const sessionAsSetup = await fetch(`${t.url}/oauth/setups/${session.data?.id}/start?token=x`, {
      redirect: "manual",
    });
    const bodies = await Promise.all([unknown, wrong, missing, sessionAsSetup].map((r) => r.text()));
    for (const [i, res] of [unknown, wrong, missing, sessionAsSetup].entries()) {
      expect(res.status).toBe(404);
      expect(bodies[i]).toBe(bodies[0]);
    }
    expect(
      (
        await t.client.GET("/provider-deployments/{provider_deployment_id}/oauth-setups/{provider_oauth_setup_id}", {
          params: { path: { provider_deployment_id: app.deploymentId, provider_oauth_setup_id: setup.data?.id ?? "" } },
        })
      ).data?.status,
    ).toBe("unused");
  });
});

describe("OAuth resources: secrets stay secret", () => {
  it("no client secret, token, code verifier or state in any response, page, log line or database row", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const responses: string[] = [];
    const record = async (res: Response) => {
      responses.push(`${res.headers.get("location") ?? ""}\n${await res.clone().text()}`);
      return res;
    };
    const dep = `/provider-deployments/${app.deploymentId}`;

    // An OAuth setup and a setup session through the real flow; the setup's token is then refreshed.
    const setup = await body(
      await record(await t.fetch(`${dep}/oauth-setups`, json("POST", { name: "s", config: {} }))),
    );
    oauth.expireNextTokenIn(5);
    const flow = await followFlow(setup.url);
    await record(flow.start);
    await record(flow.callback);
    const session = await body(
      await record(
        await t.fetch(
          `${dep}/setup-sessions`,
          json("POST", { providerAuthMethodId: provider.oauthMethodId, redirectUrl: "https://app.example.test/x" }),
        ),
      ),
    );
    const sessionFlow = await followFlow(session.url);
    await record(sessionFlow.callback);
    const authConfigId = redirectQuery(sessionFlow.callback).provider_auth_config_id ?? "";
    const setupConfig = (await body(await t.fetch(`${dep}/oauth-setups/${setup.id}`))).auth_config.id;
    await new UpstreamCredentials({ db: t.db, secrets: t.secrets }).credentialFor(t.tenant.instanceId, setupConfig);
    // A failed refresh, so its error path is covered too.
    oauth.expireNextTokenIn(5);
    const third = await body(
      await t.fetch(
        `${dep}/oauth-setups`,
        json("POST", { name: "r", config: {}, redirect_url: "https://app.example.test/r" }),
      ),
    );
    const thirdFlow = await followFlow(third.url);
    oauth.failNextToken(400, "invalid_grant");
    const thirdConfig = redirectQuery(thirdFlow.callback).provider_auth_config_id;
    await new UpstreamCredentials({ db: t.db, secrets: t.secrets })
      .credentialFor(t.tenant.instanceId, thirdConfig ?? "")
      .catch((err: Error) => responses.push(err.message));

    // A token import with an ID token.
    const imported = `imported-access-${randomBytes(8).toString("hex")}`;
    const idToken = `imported-id-${randomBytes(8).toString("hex")}`;
    const created = await body(
      await record(
        await t.fetch(
          "/provider-oauth/token-imports",
          json("POST", { access_token: imported, id_token: idToken, connection_id: authConfigId }),
        ),
      ),
    );
    expect(created.id_token).toBe(idToken);
    await record(
      await t.fetch(`/provider-oauth/token-imports/${created.id}`, json("PATCH", { access_token: `${imported}-2` })),
    );

    for (const path of [
      `${dep}/oauth-setups`,
      `${dep}/setup-sessions`,
      `${dep}/auth-configs`,
      `${dep}/auth-credentials`,
      "/provider-oauth/token-imports",
      `/provider-oauth/token-imports/${created.id}`,
    ]) {
      await record(await t.fetch(path));
    }

    const issuedSecrets = oauth.issued.flatMap((b) => [b.access_token, b.refresh_token, b.id_token].map(String));
    const verifiers = oauth.tokenRequests.map((r) => r.code_verifier).filter((v): v is string => !!v);
    const codes = oauth.tokenRequests.map((r) => r.code).filter((v): v is string => !!v);
    const states = [flow, sessionFlow, thirdFlow].map((f) => f.authorizeUrl.searchParams.get("state") ?? "");
    const secrets = {
      clientSecret: [app.clientSecret],
      issuedTokens: issuedSecrets,
      verifiers,
      imported: [imported, `${imported}-2`],
    };
    expect(issuedSecrets.length).toBeGreaterThanOrEqual(8);
    expect(verifiers.length).toBe(3);

    const haystacks = {
      responses: responses.join("\n"),
      logs: t.logs(),
      database: Object.values(await dumpAllTables(t.db)).join("\n"),
    };
    for (const [where, text] of Object.entries(haystacks)) {
      for (const [what, values] of Object.entries(secrets)) {
        for (const value of values) expect(text.includes(value), `${what} found in ${where}`).toBe(false);
      }
    }
    // The ID token is echoed only by the create response; codes and states are single-use but kept out too.
    expect(haystacks.logs.includes(idToken) || haystacks.database.includes(idToken)).toBe(false);
    for (const value of [...codes, ...states]) {
      expect(haystacks.logs.includes(value), "code/state in logs").toBe(false);
      expect(haystacks.database.includes(value), "code/state in database").toBe(false);
    }
    expect(haystacks.logs.length).toBeGreaterThan(1000);
  });
});

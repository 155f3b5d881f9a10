import { randomBytes, randomUUID } from "node:crypto";
import { OAuth2Server } from "oauth2-mock-server";
import { expect } from "vitest";
import { catalogEntry, loadTestCatalog } from "../support/catalog-fixtures.ts";
import { fixture } from "../support/fixture.ts";
import { type StartedTestServer, startTestServer, type TestServer } from "../support/server.ts";

/**
 * Test support for the OAuth flows: the real app with its public URL set to where it listens (so setup links
 * can be followed as a browser would) and every log line captured, and a real OAuth authorization server
 * (oauth2-mock-server) on 127.0.0.1.
 */

export type OAuthTestServer = StartedTestServer;

/** The app with links to its own port (OAuth start links are opened like a browser would) and debug logs kept. */
export const startOAuthTestServer = (): Promise<OAuthTestServer> =>
  startTestServer({ logLevel: "debug", linksToOwnPort: true });

export interface TokenRequest {
  body: Record<string, string>;
}

/** A real OAuth 2.0 authorization server on 127.0.0.1 that records every token request it answers. */
export async function startOAuthServer() {
  const server = new OAuth2Server();
  await server.issuer.keys.generate("RS256");
  await server.start(0, "127.0.0.1");
  const url = `http://127.0.0.1:${server.address().port}`;
  server.issuer.url = url;
  // A unique jti: two tokens signed in the same second with the same claims would otherwise be identical.
  server.service.on("beforeTokenSigning", (token: { payload: Record<string, unknown> }) => {
    token.payload.jti = randomUUID();
  });
  const tokenRequests: Record<string, string>[] = [];
  const issued: Record<string, unknown>[] = [];
  server.service.on("beforeResponse", (response: { body: unknown; statusCode: number }, req: TokenRequest) => {
    tokenRequests.push({ ...req.body });
    if (response.statusCode === 200) issued.push(response.body as Record<string, unknown>);
  });
  return {
    server,
    url,
    authorizationEndpoint: `${url}/authorize`,
    tokenEndpoint: `${url}/token`,
    /** The bodies of the token requests received, in order. */
    tokenRequests,
    /** The token sets issued (access, refresh and id tokens), in order. */
    issued,
    /** Makes the next token response an OAuth error (status and `error` code). */
    failNextToken(statusCode = 400, error = "invalid_grant") {
      server.service.once("beforeResponse", (response: { body: unknown; statusCode: number }) => {
        response.statusCode = statusCode;
        response.body = { error, error_description: "refused by the test" };
      });
    },
    /** Makes the next issued access token expire in `seconds`. */
    expireNextTokenIn(seconds: number) {
      server.service.once("beforeResponse", (response: { body: unknown; statusCode: number }) => {
        (response.body as Record<string, unknown>).expires_in = seconds;
      });
    },
    close: () => server.stop(),
  };
}
export type OAuthServer = Awaited<ReturnType<typeof startOAuthServer>>;

export const RESOURCE = "https://mcp.example.test/api";

/**
 * A catalog provider whose `oauth` method points at the test authorization server, with default scopes,
 * extra authorize parameters and an RFC 8707 resource, plus a `token` method.
 */
export async function loadOAuthProvider(
  db: TestServer["db"],
  oauth: OAuthServer,
  slug = `oauth-${randomBytes(4).toString("hex")}`,
) {
  const entry = catalogEntry(slug);
  entry.auth_methods = [
    {
      key: "oauth",
      type: "oauth",
      name: "Example OAuth",
      scopes: [
        { scope: "files.read", name: "Read files" },
        { scope: "files.write", name: "Write files" },
      ],
      oauth: {
        authorization_endpoint: oauth.authorizationEndpoint,
        token_endpoint: oauth.tokenEndpoint,
        extra_authorize_params: { access_type: "offline", prompt: "consent" },
        resource: RESOURCE,
      },
    },
    {
      key: "token",
      type: "token",
      name: "API key",
      input_schema: {
        type: "object",
        properties: { api_key: { type: "string", minLength: 8, description: "Your API key" } },
        required: ["api_key"],
        additionalProperties: false,
      },
    },
  ];
  const loaded = await loadTestCatalog(db, [entry]);
  const provider = loaded[slug];
  if (!provider) throw new Error("not loaded");
  const methods = await db
    .selectFrom("provider_auth_methods")
    .select(["id", "key"])
    .where("provider_id", "=", provider.providerId)
    .execute();
  const id = (key: string) => methods.find((m) => m.key === key)?.id ?? "";
  return { providerId: provider.providerId, oauthMethodId: id("oauth"), tokenMethodId: id("token") };
}
export type OAuthProvider = Awaited<ReturnType<typeof loadOAuthProvider>>;

/** A deployment of the provider with OAuth app credentials whose client secret the test knows. */
export async function deploymentWithApp(client: TestServer["client"], providerId: string) {
  const deployment = await client.POST("/provider-deployments", { body: { name: "Example", provider_id: providerId } });
  expect(deployment.response.status).toBe(201);
  const clientSecret = `client-secret-${randomBytes(12).toString("hex")}`;
  const clientId = `client-${randomBytes(4).toString("hex")}`;
  const credentials = await client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
    params: { path: { provider_deployment_id: deployment.data?.id ?? "" } },
    body: { name: "Example app", config: { type: "oauth", clientId, clientSecret } },
  });
  expect(credentials.response.status).toBe(201);
  return {
    deploymentId: deployment.data?.id ?? "",
    credentialsId: credentials.data?.id ?? "",
    clientId,
    clientSecret,
  };
}

/** What a browser does with a setup link: our start page, the provider's authorize page, our callback. */
export async function followFlow(setupUrl: string, options: { beforeCallback?: (callback: URL) => void } = {}) {
  const start = await fetch(setupUrl, { redirect: "manual" });
  expect(start.status, await start.clone().text()).toBe(302);
  const authorizeUrl = new URL(start.headers.get("location") ?? "");
  const cookie = (start.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const authorize = await fetch(authorizeUrl, { redirect: "manual" });
  expect(authorize.status).toBe(302);
  const callbackUrl = new URL(authorize.headers.get("location") ?? "");
  options.beforeCallback?.(callbackUrl);
  const callback = await fetch(callbackUrl, { redirect: "manual", headers: { cookie } });
  return { start, authorizeUrl, cookie, callbackUrl, callback };
}

/** The query of a redirect response's Location. */
export const redirectQuery = (res: Response) =>
  Object.fromEntries(new URL(res.headers.get("location") ?? "").searchParams);

/**
 * A file's usual OAuth setup: the app on a port of its own, a real authorization server, and a catalog provider
 * pointing at it — made in beforeAll, stopped in afterAll.
 */
export function useOAuthSetup() {
  const t = fixture(startOAuthTestServer, (server) => server.close());
  const oauth = fixture(startOAuthServer, (server) => server.close());
  const provider = fixture(() => loadOAuthProvider(t.db, oauth));
  return { t, oauth, provider };
}

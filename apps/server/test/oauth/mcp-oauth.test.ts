import { createServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { createToolplaneClient, unwrap } from "@toolplane/client";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { refreshMcpTokens } from "../../src/oauth/mcp-oauth.ts";
import { openCredential, sealCredential } from "../../src/resources/provider-auth-configs/credential-data.ts";
import { clientSecretAad } from "../../src/resources/provider-auth-credentials/service.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import { bundledSpec } from "../../src/spec.ts";
import { createRemote, firstVersion, startRunner, waitForDeployment } from "../custom-providers/support.ts";
import { connectMcp, createSession, deploymentRef, deployProvider, firstText } from "../mcp/gateway-fixtures.ts";
import { loadTestCatalog } from "../support/catalog-fixtures.ts";
import { fixture } from "../support/fixture.ts";
import { browse, protectedServerEntry, startMcpOAuthServers } from "../support/mcp-oauth-server.ts";
import { startServerProcess } from "../support/server-process.ts";
import { selfSignedCertificate, trustingFetch } from "../support/tls.ts";
import { redirectQuery, startOAuthTestServer } from "./support.ts";

/**
 * Another server (replica) over the same database, with its own gateway, credential cache and refreshes: over
 * http with the first server's public URL, or over https (a self-signed certificate) as its own public URL.
 */
async function anotherServer(protocol: "http" | "https") {
  const server = protocol === "https" ? createHttpsServer(tls) : createServer();
  server.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const url = `${protocol}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const app = createApp({
    db: t.db,
    spec: bundledSpec,
    logger: pino({ level: "silent" }),
    publicUrl: protocol === "https" ? url : t.url,
    bodyLimitBytes: 64 * 1024,
    secrets: t.secrets,
  });
  server.on("request", app);
  const client = createToolplaneClient({ baseUrl: url, apiKey: t.tenant.apiKey, fetch: httpsFetch, retries: 0 });
  return { url, server, client };
}
const stop = async ({ server }: { server: Server }) => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
};
const tls = selfSignedCertificate();
const httpsFetch = trustingFetch(tls.cert);
const t = fixture(startOAuthTestServer, (server) => server.close());
const replica = fixture(() => anotherServer("http"), stop);
const secure = fixture(() => anotherServer("https"), stop);
const as = fixture(
  () => startMcpOAuthServers({ trust: tls.cert }),
  (servers) => servers.close(),
);
afterAll(() => upstreams.closeAll());

let counter = 0;

/** A catalog provider for the protected MCP server, with only an `mcp_oauth` method: nothing about its OAuth. */
async function mcpProvider() {
  const slug = `mcp-oauth-${++counter}`;
  const loaded = await loadTestCatalog(t.db, [protectedServerEntry(as.mcpUrl, slug, { name: "Protected", tools: [] })]);
  const providerId = loaded[slug]?.providerId ?? "";
  const deployment = await deployProvider(t.client, providerId, slug);
  const method = await t.db
    .selectFrom("provider_auth_methods")
    .select("id")
    .where("provider_id", "=", providerId)
    .executeTakeFirstOrThrow();
  return { providerId, deploymentId: deployment.id as string, methodId: method.id };
}

const setupSession = ({ deploymentId, methodId }: { deploymentId: string; methodId: string }, client = t.client) =>
  unwrap(
    client.POST("/provider-deployments/{provider_deployment_id}/setup-sessions", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { providerAuthMethodId: methodId, redirectUrl: "https://app.example.test/done" },
    }),
  );

const authConfig = (id: string) =>
  t.db.selectFrom("provider_auth_configs").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

/** A setup session of a fresh deployment, completed through the real browser flow; its auth config's id. */
async function connect(deployment: { deploymentId: string; methodId: string }) {
  const session = await setupSession(deployment);
  const { callback } = await browse(session.url ?? "");
  const outcome = redirectQuery(callback as Response);
  expect(outcome).toMatchObject({ status: "completed" });
  return outcome.provider_auth_config_id ?? "";
}

describe("MCP OAuth: discovered authorization server", () => {
  it("discovers, registers dynamically and connects a catalog remote server; the session calls it", async () => {
    const deployment = await mcpProvider();
    const { deploymentId } = deployment;
    const registrationsBefore = as.registrations;
    // The authorization server supports Client ID Metadata Documents too, but this server's public URL is http:
    // a document URL must be https, so it falls back to dynamic registration.
    const authConfigId = await connect(deployment);

    const config = await authConfig(authConfigId);
    expect(config).toMatchObject({ status: "active", type: "oauth_automated", issuer: as.issuer });
    expect(config.oauth_server).toMatchObject({ issuer: as.issuer, resource: as.mcpUrl });
    const client = await t.db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("id", "=", config.provider_auth_credentials_id ?? "")
      .executeTakeFirstOrThrow();
    expect(client).toMatchObject({ issuer: as.issuer, token_endpoint_auth_method: "client_secret_basic" });
    expect(as.registrations).toBe(registrationsBefore + 1);

    // A second sign-in for the deployment reuses the client registered with the same issuer.
    await connect(deployment);
    expect(as.registrations).toBe(registrationsBefore + 1);

    const session = await createSession(t.client, [
      {
        provider_deployment: deploymentRef(deploymentId),
        provider_auth_config: { type: "reference", provider_auth_config_id: authConfigId },
      },
    ]);
    const mcp = await connectMcp(t, session);
    const { tools } = await mcp.listTools();
    const whoami = tools.find((tool) => tool.name.endsWith("whoami"));
    expect(whoami).toBeDefined();
    expect(firstText(await mcp.callTool({ name: whoami?.name ?? "" }))).toBe("hello from behind OAuth");
    await mcp.close();

    // Nothing secret reached the logs (debug level): tokens, the registered client's secret, the PKCE verifier.
    const tokens = await storedTokens(authConfigId);
    const secret = t.secrets.decrypt(client.client_secret_ciphertext ?? "", clientSecretAad(client.id));
    for (const value of [tokens.access_token, tokens.refresh_token ?? "", secret]) {
      expect(value.length).toBeGreaterThan(8);
      expect(t.logs()).not.toContain(value);
    }
  });

  it("adds a remote server by URL: custom provider → deployment → setup session URL → session, no OAuth app", async () => {
    const runner = await startRunner(t);
    try {
      const custom = await createRemote(t, as.mcpUrl, "Protected by URL");
      const version = await waitForDeployment(t, custom.id, (await firstVersion(t, custom.id)).id);
      expect(version.status).toBe("deployment_succeeded");
    } finally {
      await runner.stop();
    }
    const providerId = (
      await t.db
        .selectFrom("custom_providers")
        .select("provider_id")
        .where("name", "=", "Protected by URL")
        .executeTakeFirstOrThrow()
    ).provider_id;
    const method = await t.db
      .selectFrom("provider_auth_methods")
      .select(["id", "type"])
      .where("provider_id", "=", providerId)
      .executeTakeFirstOrThrow();
    expect(method.type).toBe("mcp_oauth");
    const deployment = await deployProvider(t.client, providerId, "Protected");
    const authConfigId = await connect({ deploymentId: deployment.id as string, methodId: method.id });
    const [a, b] = await clientsOn(deployment.id as string, authConfigId);
    expect(firstText(await a.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");
    await Promise.all([a.close(), b.close()]);
  });

  it("registers by Client ID Metadata Document where the authorization server supports it and this server is https", async () => {
    const deployment = await mcpProvider();
    const registrations = as.registrations;
    const session = await setupSession(deployment, secure.client);
    expect(session.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/oauth\/setup-sessions\//);
    const { callback } = await browse(session.url ?? "", { fetch: httpsFetch });
    const outcome = redirectQuery(callback as Response);
    expect(outcome).toMatchObject({ status: "completed" });

    // The authorization server fetched our document (and validated it) instead of registering a client.
    const documentUrl = `${secure.url}/oauth/client-metadata.json`;
    expect(as.documentFetches).toContain(documentUrl);
    expect(as.registrations).toBe(registrations);
    const config = await authConfig(outcome.provider_auth_config_id ?? "");
    expect(config).toMatchObject({ status: "active", issuer: as.issuer });
    const client = await t.db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("id", "=", config.provider_auth_credentials_id ?? "")
      .executeTakeFirstOrThrow();
    expect(client).toMatchObject({
      client_id: documentUrl,
      client_secret_ciphertext: null,
      token_endpoint_auth_method: "none",
      issuer: as.issuer,
    });

    // Its tokens open the protected server, and refresh as the same public client.
    const [a, b] = await clientsOn(deployment.deploymentId, config.id);
    expect(firstText(await a.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");
    await expireSoon(config.id);
    const refreshes = as.grants.filter((g) => g === "refresh_token").length;
    expect(firstText(await b.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");
    expect(as.grants.filter((g) => g === "refresh_token").length).toBe(refreshes + 1);
    await Promise.all([a.close(), b.close()]);
  });

  it("serves its Client ID Metadata Document at a stable URL", async () => {
    const res = await fetch(`${t.url}/oauth/client-metadata.json`);
    expect(res.status).toBe(200);
    const document = (await res.json()) as Record<string, unknown>;
    expect(document).toMatchObject({
      client_id: `${t.url}/oauth/client-metadata.json`,
      redirect_uris: [`${t.url}/oauth/callback`],
      token_endpoint_auth_method: "none",
    });
  });

  it("fails the flow on an issuer mismatch in the authorization response (RFC 9207)", async () => {
    const deployment = await mcpProvider();
    const session = await setupSession(deployment);
    const { callback } = await browse(session.url ?? "", {
      beforeCallback: (url) => url.searchParams.set("iss", "https://attacker.example.test"),
    });
    expect(redirectQuery(callback as Response)).toMatchObject({ status: "failed", error: "invalid_issuer" });
    expect(
      await t.db
        .selectFrom("provider_auth_configs")
        .where("provider_deployment_id", "=", deployment.deploymentId)
        .select("id")
        .execute(),
    ).toEqual([]);
  });

  it.each([
    ["missing", /publishes no protected-resource metadata/],
    ["malformed", /protected-resource metadata \(RFC 9728\) is malformed/],
  ] as const)("fails the flow clearly when the protected-resource metadata is %s", async (mode, reason) => {
    const deployment = await mcpProvider();
    as.setMetadata(mode);
    try {
      const session = await setupSession(deployment);
      const start = await fetch(session.url ?? "", { redirect: "manual" });
      const outcome = redirectQuery(start);
      expect(outcome).toMatchObject({ status: "failed", error: "invalid_metadata" });
      expect(outcome.error_description).toMatch(reason);
    } finally {
      as.setMetadata("ok");
    }
  });
});

/** The stored token set of an auth config, decrypted as the app does. */
async function storedTokens(authConfigId: string) {
  const row = await authConfig(authConfigId);
  const data = openCredential(t.secrets, row.id, row.credential_ciphertext ?? "");
  if (data.kind !== "oauth") throw new Error("not an OAuth credential");
  return data;
}

/** Time passes: the token now has less left than the refresh margin, so the next use must refresh it. */
async function expireSoon(authConfigId: string) {
  const tokens = await storedTokens(authConfigId);
  await t.db
    .updateTable("provider_auth_configs")
    .set({
      credential_ciphertext: sealCredential(t.secrets, authConfigId, {
        ...tokens,
        expires_at: new Date(Date.now() + 5_000).toISOString(),
      }),
    })
    .where("id", "=", authConfigId)
    .execute();
}

/** The re-authentication link in a failed call's answer: a setup-session start page of this server. */
function reauthLink(result: unknown): string {
  const link = /Sign in again by opening (\S+)/.exec(firstText(result))?.[1] ?? "";
  expect(link).toMatch(new RegExp(`^${t.url}/oauth/setup-sessions/pas_\\w+/start\\?token=`));
  return link;
}

/** A session on the deployment through the auth config, and an MCP client of it on each server process. */
async function clientsOn(deploymentId: string, authConfigId: string) {
  const session = await createSession(t.client, [
    {
      provider_deployment: deploymentRef(deploymentId),
      provider_auth_config: { type: "reference", provider_auth_config_id: authConfigId },
    },
  ]);
  return Promise.all([connectMcp(t, session), connectMcp({ url: replica.url }, session)]);
}

describe("MCP OAuth: refresh", () => {
  it("refreshes an expiring token once across two app replicas in this process under concurrent calls, storing the rotated refresh token", async () => {
    const deployment = await mcpProvider();
    const authConfigId = await connect(deployment);
    const [a, b] = await clientsOn(deployment.deploymentId, authConfigId);
    const before = await storedTokens(authConfigId);
    await expireSoon(authConfigId);
    const refreshesBefore = as.grants.filter((g) => g === "refresh_token").length;

    const calls = [a, b, a, b, a, b].map((client) => client.callTool({ name: "whoami" }));
    const results = await Promise.all(calls);
    expect(results.map(firstText)).toEqual(Array(6).fill("hello from behind OAuth"));

    // One refresh for all six calls on both processes: a second one would have reused the rotated-away refresh
    // token, which oidc-provider answers with invalid_grant (and the revocation of the whole grant).
    expect(as.grants.filter((g) => g === "refresh_token").length).toBe(refreshesBefore + 1);
    expect(as.grantErrors).toEqual([]);
    const after = await storedTokens(authConfigId);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect(after.access_token).not.toBe(before.access_token);
    expect((await authConfig(authConfigId)).status).toBe("active");
    await Promise.all([a.close(), b.close()]);
  });

  it("marks the auth config failed on invalid_grant and answers with a re-auth link that repairs the same auth config", async () => {
    const deployment = await mcpProvider();
    as.setAccessTokenTtl(5);
    const authConfigId = await connect(deployment).finally(() => as.setAccessTokenTtl(3600));
    // Someone else redeems the refresh token first: with rotation, ours is then spent.
    const row = await authConfig(authConfigId);
    const client = await t.db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("id", "=", row.provider_auth_credentials_id ?? "")
      .executeTakeFirstOrThrow();
    const stolen = await storedTokens(authConfigId);
    await refreshMcpTokens(
      { secrets: t.secrets, fetch },
      row.oauth_server ?? { issuer: "", metadata: {}, resource: null },
      client,
      stolen.refresh_token ?? "",
      new Date(),
    );

    const [a, b] = await clientsOn(deployment.deploymentId, authConfigId);
    const failed = await a.callTool({ name: "whoami" });
    expect(failed.isError).toBe(true);
    expect(firstText(failed)).toMatch(/needs re-authentication.*invalid_grant/);
    const link = reauthLink(failed);
    const config = await authConfig(authConfigId);
    expect(config.status).toBe("refresh_failed");
    expect(config.status_reason).toMatch(/invalid_grant/);
    expect(config.status_reason).not.toContain(stolen.refresh_token ?? "-");
    // The other process fails closed too, without trying the spent token again, and hands out the same link.
    const grantErrors = as.grantErrors.length;
    expect(reauthLink(await b.callTool({ name: "whoami" }))).toBe(link);
    expect(as.grantErrors.length).toBe(grantErrors);

    // The link is a capability of the session's client: an hour at most, never logged nor stored with the call.
    const key = new URL(link).searchParams.get("token") ?? "";
    expect(key.length).toBeGreaterThan(20);
    expect(t.logs()).not.toContain(key);
    const calls = await t.db.selectFrom("tool_calls").select("error").where("error", "is not", null).execute();
    expect(JSON.stringify(calls)).not.toContain(key);
    const repair = await t.db
      .selectFrom("oauth_flows")
      .selectAll()
      .where("repairs_provider_auth_config_id", "=", authConfigId)
      .executeTakeFirstOrThrow();
    expect(repair.expires_at.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);

    // Signing in at another issuer never repairs it: the config stays bound to its own.
    await t.db
      .updateTable("provider_auth_configs")
      .set({ issuer: "https://other.example.test" })
      .where("id", "=", authConfigId)
      .execute();
    const refused = await fetch(link, { redirect: "manual" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/another authorization server/);
    await t.db.updateTable("provider_auth_configs").set({ issuer: as.issuer }).where("id", "=", authConfigId).execute();
    expect((await authConfig(authConfigId)).status).toBe("refresh_failed");

    // A fresh link (the refused one has failed), followed through the real authorization server by a browser.
    const fresh = reauthLink(await a.callTool({ name: "whoami" }));
    expect(fresh).not.toBe(link);
    const { callback } = await browse(fresh);
    expect(callback.status).toBe(200);
    expect(await callback.text()).toMatch(/You are connected/);
    const repaired = await authConfig(authConfigId);
    expect(repaired).toMatchObject({ status: "active", status_reason: null, issuer: as.issuer });
    expect((await storedTokens(authConfigId)).refresh_token).not.toBe(stolen.refresh_token);

    // The same sessions, on both processes, work again through the same auth config.
    expect(firstText(await a.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");
    expect(firstText(await b.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");
    await Promise.all([a.close(), b.close()]);
  });

  it("never sends a client or tokens bound to one issuer to another", async () => {
    const deployment = await mcpProvider();
    as.setAccessTokenTtl(5);
    const authConfigId = await connect(deployment).finally(() => as.setAccessTokenTtl(3600));
    // The registered client now says it belongs to another authorization server than the tokens' issuer.
    await t.db
      .updateTable("provider_auth_credentials")
      .set({ issuer: "https://other-issuer.example.test" })
      .where("id", "=", (await authConfig(authConfigId)).provider_auth_credentials_id ?? "")
      .execute();
    const grants = as.grants.length + as.grantErrors.length;
    const [a, b] = await clientsOn(deployment.deploymentId, authConfigId);
    expect((await a.callTool({ name: "whoami" })).isError).toBe(true);
    const config = await authConfig(authConfigId);
    expect(config).toMatchObject({ status: "refresh_failed", issuer: as.issuer });
    expect(config.status_reason).toMatch(/registered with another authorization server/);
    // Refused before any request: the token endpoint saw nothing.
    expect(as.grants.length + as.grantErrors.length).toBe(grants);
    await Promise.all([a.close(), b.close()]);
  });
});

/**
 * What the in-process replica above stands in for, with real processes: two `main.ts` servers over one PostgreSQL
 * database (PGlite is one process's alone, so this runs only with TEST_DATABASE_URL, see scripts/with-postgres.mjs).
 */
describe.skipIf(!process.env.TEST_DATABASE_URL)("MCP OAuth: refresh across two server processes (PostgreSQL)", () => {
  const processes = fixture(
    async () => {
      const key = `${t.secretKey.id}:${t.secretKey.key.toString("base64")}`;
      const url = t.databaseUrl ?? "";
      return { servers: await Promise.all([startServerProcess(url, key), startServerProcess(url, key)]) };
    },
    async ({ servers }) => {
      await Promise.all(
        servers.map(
          ({ child }) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) return resolve();
              child.once("exit", () => resolve());
              child.kill("SIGTERM");
            }),
        ),
      );
    },
  );

  it("refreshes an expiring token once for concurrent calls on both processes, storing the rotated refresh token", async () => {
    const deployment = await mcpProvider();
    const authConfigId = await connect(deployment);
    const session = await createSession(t.client, [
      {
        provider_deployment: deploymentRef(deployment.deploymentId),
        provider_auth_config: { type: "reference", provider_auth_config_id: authConfigId },
      },
    ]);
    const [a, b] = await Promise.all(processes.servers.map(({ url }) => connectMcp({ url }, session)));
    if (!a || !b) throw new Error("no clients");
    const before = await storedTokens(authConfigId);
    await expireSoon(authConfigId);
    const refreshes = as.grants.filter((g) => g === "refresh_token").length;
    const grantErrors = as.grantErrors.length;

    const results = await Promise.all([a, b, a, b, a, b, a, b].map((client) => client.callTool({ name: "whoami" })));
    expect(results.map(firstText)).toEqual(Array(8).fill("hello from behind OAuth"));
    // One refresh grant for both processes: a second would have reused the rotated-away refresh token, which
    // oidc-provider answers with invalid_grant.
    expect(as.grants.filter((g) => g === "refresh_token").length).toBe(refreshes + 1);
    expect(as.grantErrors.length).toBe(grantErrors);
    const after = await storedTokens(authConfigId);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect((await authConfig(authConfigId)).status).toBe("active");
    await Promise.all([a.close(), b.close()]);
  });
});

describe("MCP OAuth: token imports", () => {
  const importToken = (body: {
    access_token: string;
    server_deployment_id?: string;
    connection_id?: string;
    expires_at?: string;
  }) => t.client.POST("/provider-oauth/token-imports", { body: { token_type: "Bearer", ...body } });

  it("imports a token for an mcp_oauth deployment, bound to the issuer discovered from its server", async () => {
    // A real token for the protected server, obtained by signing in elsewhere.
    const { access_token } = await storedTokens(await connect(await mcpProvider()));
    const deployment = await mcpProvider();
    const imported = await unwrap(importToken({ access_token, server_deployment_id: deployment.deploymentId }));
    expect(imported.status).toBe("active");
    const config = await authConfig(imported.connection_id);
    expect(config).toMatchObject({
      type: "oauth_manual",
      status: "active",
      issuer: as.issuer,
      provider_auth_method_id: deployment.methodId,
    });
    expect(config.oauth_server).toMatchObject({ issuer: as.issuer, resource: as.mcpUrl });
    const [a, b] = await clientsOn(deployment.deploymentId, config.id);
    expect(firstText(await a.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");

    // Onto the existing connection: it keeps its issuer. An imported token that has expired (no refresh token)
    // gets the re-auth link too, whose sign-in at that issuer makes the same connection a refreshable one.
    const expired = { access_token, connection_id: config.id, expires_at: new Date(Date.now() - 1000).toISOString() };
    const again = await unwrap(importToken(expired));
    expect(again).toMatchObject({ connection_id: config.id, status: "expired" });
    expect(await authConfig(config.id)).toMatchObject({ status: "expired", issuer: as.issuer });
    const { callback } = await browse(reauthLink(await a.callTool({ name: "whoami" })));
    expect(callback.status).toBe(200);
    expect(await authConfig(config.id)).toMatchObject({ status: "active", type: "oauth_automated", issuer: as.issuer });
    expect((await storedTokens(config.id)).refresh_token).toEqual(expect.any(String));
    expect(firstText(await b.callTool({ name: "whoami" }))).toBe("hello from behind OAuth");
    await Promise.all([a.close(), b.close()]);
  });

  it("answers 502 and creates nothing when the server's authorization server cannot be discovered", async () => {
    const deployment = await mcpProvider();
    as.setMetadata("missing");
    try {
      const res = await importToken({
        access_token: "a-token-from-elsewhere",
        server_deployment_id: deployment.deploymentId,
      });
      expect(res.response.status).toBe(502);
      expect(res.error).toMatchObject({ code: "bad_gateway" });
      expect(res.error?.message).toMatch(/publishes no protected-resource metadata/);
    } finally {
      as.setMetadata("ok");
    }
    const configs = await t.db
      .selectFrom("provider_auth_configs")
      .select("id")
      .where("provider_deployment_id", "=", deployment.deploymentId)
      .execute();
    expect(configs).toEqual([]);
  });
});

import { unwrap } from "@toolplane/client";
import { afterAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { connectMcp, createSession, deploymentRef, deployProvider, firstText } from "../mcp/gateway-fixtures.ts";
import { loadTestCatalog } from "../support/catalog-fixtures.ts";
import { fixture } from "../support/fixture.ts";
import { browse, startMcpOAuthServers } from "../support/mcp-oauth-server.ts";
import { redirectQuery, startOAuthTestServer } from "./support.ts";

const t = fixture(startOAuthTestServer, (server) => server.close());
const as = fixture(startMcpOAuthServers, (servers) => servers.close());
afterAll(() => upstreams.closeAll());

let counter = 0;

/** A catalog provider for the protected MCP server, with only an `mcp_oauth` method: nothing about its OAuth. */
async function mcpProvider() {
  const slug = `mcp-oauth-${++counter}`;
  const loaded = await loadTestCatalog(t.db, [
    {
      slug,
      name: "Protected",
      publisher: { slug: "toolplane-tests", name: "Toolplane tests" },
      current_version: "1.0.0",
      versions: [
        {
          version: "1.0.0",
          status: "released",
          runtime: { type: "remote", url: as.mcpUrl, protocol: "streamable_http" },
          config_schema: { type: "object", properties: {}, additionalProperties: false },
          tools: [],
        },
      ],
      auth_methods: [{ key: "mcp", type: "mcp_oauth", name: "Sign in" }],
    },
  ]);
  const providerId = loaded[slug]?.providerId ?? "";
  const deployment = await deployProvider(t.client, providerId, slug);
  const method = await t.db
    .selectFrom("provider_auth_methods")
    .select("id")
    .where("provider_id", "=", providerId)
    .executeTakeFirstOrThrow();
  return { providerId, deploymentId: deployment.id as string, methodId: method.id };
}

const setupSession = ({ deploymentId, methodId }: { deploymentId: string; methodId: string }) =>
  unwrap(
    t.client.POST("/provider-deployments/{provider_deployment_id}/setup-sessions", {
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
  it("discovers, registers dynamically and connects a remote server added by URL; the session calls it", async () => {
    const deployment = await mcpProvider();
    const { deploymentId } = deployment;
    const registrationsBefore = as.registrations;
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

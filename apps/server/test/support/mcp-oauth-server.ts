import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, Server } from "@modelcontextprotocol/server";
import express from "express";
import Provider, { errors } from "oidc-provider";
import type { CatalogEntry } from "../../src/catalog/loader.ts";
import { EMPTY_CONFIG_SCHEMA } from "./catalog-fixtures.ts";
import { trustingFetch } from "./tls.ts";

/**
 * A real authorization server (oidc-provider: dynamic registration, PKCE, resource indicators, `iss` in
 * authorization responses, refresh token rotation) in front of an MCP server that accepts only its access tokens
 * for its own resource. The user's login and consent are approved by the interaction endpoint as soon as a browser
 * reaches it, so a flow can be driven over HTTP.
 */

export type MetadataMode = "ok" | "missing" | "malformed";

export interface McpOAuthServers {
  issuer: string;
  /** The MCP endpoint (the protected resource). */
  mcpUrl: string;
  /** How the MCP server publishes its protected-resource metadata from now on. */
  setMetadata(mode: MetadataMode): void;
  /** Lifetime of the access tokens issued from now on, in seconds. */
  setAccessTokenTtl(seconds: number): void;
  /** Grants the token endpoint answered, by grant type (`authorization_code`, `refresh_token`). */
  grants: string[];
  /** Token endpoint errors, by OAuth error code. */
  grantErrors: string[];
  /** Dynamic registrations answered. */
  registrations: number;
  /** The Client ID Metadata Documents (URLs) the authorization server fetched. */
  documentFetches: string[];
  provider: Provider;
  close(): Promise<void>;
}

const listen = async (server: HttpServer) => {
  server.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

const close = (server: HttpServer) => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
};

/**
 * `trust`: the certificate of the https origin whose Client ID Metadata Documents the authorization server fetches
 * (oidc-provider's own CIMD support, draft-02, which refuses private addresses unless its `fetch` is replaced).
 */
export async function startMcpOAuthServers(options: { trust?: string } = {}): Promise<McpOAuthServers> {
  const asServer = createServer();
  const mcpApp = express();
  const mcpServer = createServer(mcpApp);
  const issuer = await listen(asServer);
  const mcpOrigin = await listen(mcpServer);
  const mcpUrl = `${mcpOrigin}/mcp`;

  const state = {
    metadata: "ok" as MetadataMode,
    accessTokenTtl: 3600,
    grants: [] as string[],
    grantErrors: [] as string[],
    registrations: 0,
    documentFetches: [] as string[],
  };
  const documentFetch = options.trust ? trustingFetch(options.trust) : fetch;

  const provider = new Provider(issuer, {
    clients: [],
    cookies: { keys: ["mcp-oauth-test-cookie-key"] },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      // Advertised as `client_id_metadata_document_supported`; an https `client_id` is fetched and validated
      // (client_id equal to the URL, no shared secret) and its redirect_uris are the ones allowed.
      clientIdMetadataDocument: { enabled: true, ack: "draft-02" },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => mcpUrl,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== mcpUrl) throw new errors.InvalidTarget();
          return { scope: "mcp:tools", accessTokenTTL: state.accessTokenTtl, accessTokenFormat: "opaque" };
        },
      },
    },
    scopes: ["openid", "offline_access"],
    pkce: { required: () => true },
    rotateRefreshToken: true,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: {
      Interaction: 600,
      Session: 600,
      Grant: 3600,
      RefreshToken: 3600,
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 3600,
    },
    fetch: (url, init) => {
      state.documentFetches.push(String(url));
      return documentFetch(url, init);
    },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  });
  provider.on("grant.success", (ctx) => state.grants.push(String(ctx.oidc.params?.grant_type)));
  provider.on("grant.error", (_ctx, error) => state.grantErrors.push(String((error as { error?: string }).error)));
  provider.on("registration_create.success", () => state.registrations++);

  /** Login as `alice` and consent to whatever the client asked for. */
  async function approve(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === "login") {
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: "alice" } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session?.accountId, clientId: String(details.params.client_id) });
    if (!grant) throw new Error("grant not found");
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  const callback = provider.callback();
  asServer.on("request", (req, res) => {
    if (req.url?.startsWith("/interaction/")) {
      approve(req, res).catch(() => {
        res.statusCode = 500;
        res.end();
      });
      return;
    }
    callback(req, res);
  });

  const resourceMetadataUrl = `${mcpOrigin}/.well-known/oauth-protected-resource/mcp`;
  mcpApp.get("/.well-known/oauth-protected-resource/mcp", (_req, res) => {
    if (state.metadata === "missing") res.status(404).json({ error: "not_found" });
    else if (state.metadata === "malformed") res.type("json").send('{"resource": 42, "authorization_servers": "x"');
    else res.json({ resource: mcpUrl, authorization_servers: [issuer], scopes_supported: ["mcp:tools"] });
  });

  const handler = createMcpHandler(() => {
    const server = new Server({ name: "protected-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => ({
      tools: [{ name: "whoami", description: "Who the access token belongs to.", inputSchema: { type: "object" } }],
    }));
    server.setRequestHandler("tools/call", async () => ({
      content: [{ type: "text", text: "hello from behind OAuth" }],
    }));
    return server;
  });
  const node = toNodeHandler(handler);
  mcpApp.use(express.json());
  mcpApp.all("/mcp", async (req, res) => {
    const value = /^Bearer (.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const token = value ? await provider.AccessToken.find(value) : undefined;
    if (!token || token.isExpired || token.aud !== mcpUrl) {
      res
        .status(401)
        .set("www-authenticate", `Bearer resource_metadata="${resourceMetadataUrl}", scope="mcp:tools"`)
        .json({ error: "invalid_token" });
      return;
    }
    void node(req, res, req.body);
  });

  return Object.assign(state, {
    setMetadata: (mode: MetadataMode) => {
      state.metadata = mode;
    },
    setAccessTokenTtl: (seconds: number) => {
      state.accessTokenTtl = seconds;
    },
    issuer,
    mcpUrl,
    provider,
    close: async () => {
      await handler.close();
      await Promise.all([close(asServer), close(mcpServer)]);
    },
  });
}

/**
 * What a browser does with a setup link: our start page, then the authorization server's redirects (keeping its
 * cookies) until it sends the browser back to our callback, which is opened with our flow cookie. `beforeCallback`
 * may tamper with the callback URL (an attacker's `iss`, say); `fetch` is the browser's (one that trusts a test
 * certificate, for an https server).
 */
export async function browse(
  setupUrl: string,
  options: { beforeCallback?: (callback: URL) => void; fetch?: typeof globalThis.fetch } = {},
) {
  const fetch = options.fetch ?? globalThis.fetch;
  const start = await fetch(setupUrl, { redirect: "manual" });
  const flowCookie = (start.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const jar = new Map<string, string>();
  let url = new URL(start.headers.get("location") ?? "");
  const ours = new URL(setupUrl).origin;
  for (let hop = 0; hop < 10 && url.origin !== ours; hop++) {
    const res = await fetch(url, {
      redirect: "manual",
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") },
    });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair = ""] = cookie.split(";");
      const at = pair.indexOf("=");
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = res.headers.get("location");
    if (!location) throw new Error(`the authorization server stopped at ${res.status}: ${await res.text()}`);
    url = new URL(location, url);
  }
  options.beforeCallback?.(url);
  const callback = await fetch(url, { redirect: "manual", headers: { cookie: flowCookie } });
  return { start, callback };
}

type AuthMethod = CatalogEntry["auth_methods"][number];

/** A catalog entry for the protected MCP server at `mcpUrl`, signed in to with `authMethod` (MCP OAuth by default). */
export function protectedServerEntry(
  mcpUrl: string,
  slug: string,
  options: { name?: string; tools?: CatalogEntry["versions"][number]["tools"]; authMethod?: AuthMethod } = {},
): CatalogEntry {
  return {
    slug,
    name: options.name ?? "Protected Files",
    publisher: { slug: "toolplane-tests", name: "Toolplane tests" },
    current_version: "1.0.0",
    versions: [
      {
        version: "1.0.0",
        status: "released",
        runtime: { type: "remote", url: mcpUrl, protocol: "streamable_http" },
        config_schema: EMPTY_CONFIG_SCHEMA,
        tools: options.tools ?? [{ name: "whoami" }],
      },
    ],
    auth_methods: [options.authMethod ?? { key: "mcp", type: "mcp_oauth", name: "Sign in" }],
  };
}

import {
  type AuthorizationServerMetadata,
  checkResourceAllowed,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  exchangeAuthorization,
  extractWWWAuthenticateParams,
  IssuerMismatchError,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  OAuthError,
  type OAuthProtectedResourceMetadata,
  type OAuthTokens,
  refreshAuthorization,
  registerClient,
  startAuthorization,
  validateAuthorizationResponseIssuer,
} from "@modelcontextprotocol/client";
import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { CredentialData, DiscoveredOAuthServer, JsonObject, Row } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import { clientSecretAad } from "../resources/provider-auth-credentials/service.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import type { Fetch } from "./token-endpoint.ts";

/**
 * MCP OAuth (auth method type `mcp_oauth`): the authorization server of a remote MCP server is discovered from the
 * server (its 401 `WWW-Authenticate`, RFC 9728 protected-resource metadata, RFC 8414 else OpenID discovery), the
 * client is registered by this server, and the code flow runs with PKCE, `resource` (RFC 8707) and the `iss` check
 * (RFC 9207). The protocol steps are the MCP SDK's own OAuth helpers (`@modelcontextprotocol/client`), which follow
 * the MCP authorization spec; this module chooses between them, stores what they return and binds it to the issuer.
 */

/** Where this server publishes its Client ID Metadata Document: the URL is the `client_id`. */
export const CLIENT_METADATA_PATH = "/oauth/client-metadata.json";

/** A discovery, registration or token step that failed; `reason` is safe to show and store (no secrets). */
export class McpOAuthError extends Error {
  constructor(
    readonly code: string,
    readonly reason: string,
  ) {
    super(reason);
    this.name = "McpOAuthError";
  }
}

/** The document a Client ID Metadata Document authorization server fetches from `client_id`. */
export function clientMetadataDocument(publicUrl: string): OAuthClientMetadata & { client_id: string } {
  return {
    client_id: `${publicUrl}${CLIENT_METADATA_PATH}`,
    client_name: "Toolplane",
    client_uri: publicUrl,
    redirect_uris: [`${publicUrl}/oauth/callback`],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    // A URL client id carries no secret.
    token_endpoint_auth_method: "none",
  };
}

/** What a dynamic registration (RFC 7591) asks for: a confidential web client that may refresh. */
function registrationMetadata(publicUrl: string): OAuthClientMetadata {
  const { client_id: _, ...rest } = clientMetadataDocument(publicUrl);
  return { ...rest, token_endpoint_auth_method: "client_secret_basic" };
}

const DISCOVERY_TIMEOUT_MS = 15_000;

/** Every request of discovery, registration and the token endpoint: bounded, and never following redirects. */
const bounded =
  (fetchImpl: Fetch): Fetch =>
  (input, init) =>
    fetchImpl(input, { ...init, redirect: "error", signal: init?.signal ?? AbortSignal.timeout(DISCOVERY_TIMEOUT_MS) });

/** The text of an SDK or network failure, without anything the other side sent beyond an OAuth error code. */
function why(error: unknown): string {
  if (error instanceof OAuthError && /^[\w.-]{1,64}$/.test(error.code)) return error.code;
  if (error instanceof IssuerMismatchError) return "issuer mismatch";
  return error instanceof TypeError ? "unreachable" : "invalid answer";
}

type Challenge = ReturnType<typeof extractWWWAuthenticateParams>;

/**
 * The parameters of the MCP server's `WWW-Authenticate` when an unauthenticated request gets 401 (the sign that it
 * wants MCP OAuth), else undefined. Throws when the server cannot be reached.
 */
export async function challengeOf(serverUrl: string, fetchImpl: Fetch): Promise<Challenge | undefined> {
  const res = await bounded(fetchImpl)(serverUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
  });
  await res.body?.cancel();
  return res.status === 401 && res.headers.has("www-authenticate") ? extractWWWAuthenticateParams(res) : undefined;
}

export interface Discovery {
  server: DiscoveredOAuthServer;
  /**
   * The scope to request: the 401 challenge's, else the resource's `scopes_supported`, plus `offline_access` where
   * the authorization server offers it; undefined for none.
   */
  scope: string | undefined;
}

/**
 * Finds the authorization server of the MCP server at `serverUrl`: an unauthenticated request for the 401
 * challenge (its `resource_metadata` and `scope`), the protected-resource metadata (at the challenge's URL, else the
 * well-known ones), then its first authorization server's metadata (RFC 8414, else OpenID discovery; the SDK checks
 * that it echoes the issuer). The resource the metadata names must be the server itself, and the authorization
 * server must support PKCE S256 (the MCP spec makes both a MUST).
 */
export async function discover(serverUrl: string, fetchImpl: Fetch): Promise<Discovery> {
  const fetchFn = bounded(fetchImpl);
  let challenge: Challenge;
  try {
    challenge = (await challengeOf(serverUrl, fetchImpl)) ?? {};
  } catch {
    throw new McpOAuthError("temporarily_unavailable", "The MCP server could not be reached.");
  }
  // The current MCP revision makes protected-resource metadata a MUST for servers and its use a MUST for clients:
  // no guessing the authorization server from the MCP server's origin (the SDK's fallback for 2025-03-26 servers).
  let resourceMetadata: OAuthProtectedResourceMetadata;
  try {
    resourceMetadata = await discoverOAuthProtectedResourceMetadata(
      serverUrl,
      { resourceMetadataUrl: challenge.resourceMetadataUrl },
      fetchFn,
    );
  } catch (error) {
    const malformed = error instanceof SyntaxError || (error as Error).name === "ZodError";
    throw new McpOAuthError(
      "invalid_metadata",
      malformed
        ? "The MCP server's protected-resource metadata (RFC 9728) is malformed."
        : "The MCP server publishes no protected-resource metadata (RFC 9728): it is missing or unavailable.",
    );
  }
  const authorizationServer = resourceMetadata.authorization_servers?.[0];
  if (!authorizationServer) {
    throw new McpOAuthError(
      "invalid_metadata",
      "The MCP server's protected-resource metadata (RFC 9728) names no authorization server.",
    );
  }
  let metadata: AuthorizationServerMetadata | undefined;
  try {
    metadata = await discoverAuthorizationServerMetadata(authorizationServer, { fetchFn });
  } catch (error) {
    throw new McpOAuthError(
      error instanceof IssuerMismatchError ? "invalid_issuer" : "invalid_metadata",
      `The authorization server's metadata (RFC 8414 or OpenID discovery) could not be used (${why(error)}).`,
    );
  }
  if (!metadata) {
    throw new McpOAuthError(
      "invalid_metadata",
      "The authorization server publishes no metadata (RFC 8414 or OpenID discovery).",
    );
  }
  if (!metadata.code_challenge_methods_supported?.includes("S256")) {
    throw new McpOAuthError("invalid_metadata", "The authorization server does not support PKCE with S256.");
  }
  const resource = resourceMetadata.resource;
  if (!checkResourceAllowed({ requestedResource: serverUrl, configuredResource: resource })) {
    throw new McpOAuthError(
      "invalid_metadata",
      "The protected-resource metadata names a resource other than the server.",
    );
  }
  const scopes = (challenge.scope ?? resourceMetadata.scopes_supported?.join(" ") ?? "").split(" ").filter(Boolean);
  // Many authorization servers issue refresh tokens only for `offline_access`; sessions outlive access tokens.
  if (scopes.length && metadata.scopes_supported?.includes("offline_access") && !scopes.includes("offline_access")) {
    scopes.push("offline_access");
  }
  return {
    server: { issuer: metadata.issuer, metadata: metadata as unknown as JsonObject, resource },
    scope: scopes.length ? scopes.join(" ") : undefined,
  };
}

const asMetadata = (server: DiscoveredOAuthServer) => server.metadata as unknown as AuthorizationServerMetadata;

type Credentials = Row<"provider_auth_credentials">;

/** The SDK's view of a stored client: its id, its decrypted secret if it has one, how it authenticates. */
function clientInformation(secrets: SecretBox, credentials: Credentials): OAuthClientInformationMixed {
  return {
    client_id: credentials.client_id,
    ...(credentials.client_secret_ciphertext
      ? { client_secret: secrets.decrypt(credentials.client_secret_ciphertext, clientSecretAad(credentials.id)) }
      : {}),
    // An app a user entered sends its secret in the body, as plain `oauth` methods do.
    token_endpoint_auth_method: credentials.token_endpoint_auth_method ?? "client_secret_post",
  };
}

/** A registered client is used only with the issuer it was registered with. */
function assertBound(server: DiscoveredOAuthServer, credentials: Credentials) {
  if (credentials.issuer !== null && credentials.issuer !== server.issuer) {
    throw new McpOAuthError("invalid_issuer", "The client was registered with another authorization server.");
  }
}

/**
 * A refresh at the issuer the tokens are bound to, with their `resource`; a rotated refresh token replaces the old
 * one, and an answer without one keeps it (RFC 6749 §6).
 */
export async function refreshMcpTokens(
  deps: { secrets: SecretBox; fetch: Fetch },
  server: DiscoveredOAuthServer,
  credentials: Credentials,
  refreshToken: string,
  now: Date,
): Promise<Extract<CredentialData, { kind: "oauth" }>> {
  assertBound(server, credentials);
  try {
    const tokens = await refreshAuthorization(server.issuer, {
      metadata: asMetadata(server),
      clientInformation: clientInformation(deps.secrets, credentials),
      refreshToken,
      ...(server.resource ? { resource: new URL(server.resource) } : {}),
      fetchFn: bounded(deps.fetch),
    });
    return tokenData(tokens, now, refreshToken);
  } catch (error) {
    throw new McpOAuthError(
      error instanceof OAuthError ? error.code : "temporarily_unavailable",
      `The authorization server did not refresh the tokens (${why(error)}).`,
    );
  }
}

/** The remote URL a deployment's provider runs at (its locked version, else the provider's current one). */
export async function remoteServerUrl(db: Db, deploymentId: string): Promise<string> {
  const row = await db
    .selectFrom("provider_deployments as d")
    .innerJoin("providers as p", "p.id", "d.provider_id")
    .innerJoin("provider_versions as v", (join) =>
      join.on(sql<boolean>`v.id = coalesce(d.locked_version_id, p.current_version_id)`),
    )
    .select("v.runtime")
    .where("d.id", "=", deploymentId)
    .executeTakeFirst();
  if (row?.runtime.type !== "remote") {
    throw new McpOAuthError("invalid_request", "MCP OAuth needs a provider that runs at a remote MCP server URL.");
  }
  return row.runtime.url;
}

export interface McpOAuthDeps {
  db: Db;
  secrets: SecretBox;
  publicUrl: string;
  fetch: Fetch;
}

/** The client registration and token steps of MCP OAuth, over the rows that store their results. */
export class McpOAuthClient {
  private readonly fetchFn: Fetch;

  constructor(private readonly deps: McpOAuthDeps) {
    this.fetchFn = bounded(deps.fetch);
  }

  /**
   * The client to authorize as, bound to the discovered issuer: one already registered with it for this
   * deployment; else this server's Client ID Metadata Document where the authorization server supports it (an
   * `https` public URL is required); else a dynamic registration (RFC 7591); else the auth credentials the user gave
   * (`givenId`, or the deployment's newest unbound ones).
   */
  async clientFor(flow: Row<"oauth_flows">, server: DiscoveredOAuthServer): Promise<Credentials> {
    const { db } = this.deps;
    const bound = await db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("provider_deployment_id", "=", flow.provider_deployment_id)
      .where("issuer", "=", server.issuer)
      .orderBy("id", "desc")
      .executeTakeFirst();
    if (bound) return bound;
    const metadata = asMetadata(server);
    if (metadata.client_id_metadata_document_supported && this.deps.publicUrl.startsWith("https:")) {
      const document = clientMetadataDocument(this.deps.publicUrl);
      return this.insertClient(flow, server, { client_id: document.client_id, token_endpoint_auth_method: "none" });
    }
    if (metadata.registration_endpoint) {
      let registered: Awaited<ReturnType<typeof registerClient>>;
      try {
        registered = await registerClient(server.issuer, {
          metadata,
          clientMetadata: registrationMetadata(this.deps.publicUrl),
          fetchFn: this.fetchFn,
        });
      } catch (error) {
        throw new McpOAuthError(
          "registration_failed",
          `The authorization server refused to register this client (${why(error)}).`,
        );
      }
      return this.insertClient(flow, server, registered);
    }
    let given = db
      .selectFrom("provider_auth_credentials")
      .selectAll()
      .where("provider_deployment_id", "=", flow.provider_deployment_id)
      .where("issuer", "is", null);
    given = flow.provider_auth_credentials_id
      ? given.where("id", "=", flow.provider_auth_credentials_id)
      : given.orderBy("id", "desc");
    const manual = await given.executeTakeFirst();
    if (manual) return manual;
    throw new McpOAuthError(
      "unregistered_client",
      "The authorization server supports neither Client ID Metadata Documents nor dynamic client registration; " +
        "create auth credentials (an OAuth app registered with it) for the deployment first.",
    );
  }

  private insertClient(
    flow: Row<"oauth_flows">,
    server: DiscoveredOAuthServer,
    client: { client_id: string; client_secret?: string; token_endpoint_auth_method?: string },
  ): Promise<Credentials> {
    const id = newId("par");
    const now = new Date();
    return this.deps.db
      .insertInto("provider_auth_credentials")
      .values({
        id,
        instance_id: flow.instance_id,
        provider_id: flow.provider_id,
        provider_deployment_id: flow.provider_deployment_id,
        type: "oauth",
        client_id: client.client_id,
        client_secret_ciphertext: client.client_secret
          ? this.deps.secrets.encrypt(client.client_secret, clientSecretAad(id))
          : null,
        issuer: server.issuer,
        token_endpoint_auth_method: client.token_endpoint_auth_method ?? null,
        scopes: JSON.stringify([]),
        name: `Registered with ${server.issuer}`,
        description: null,
        metadata: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** The authorization URL (PKCE S256, `resource`, `state`) and the verifier to keep for the callback. */
  async authorizationUrl(
    server: DiscoveredOAuthServer,
    credentials: Credentials,
    params: { state: string; scope: string | undefined; redirectUrl: string },
  ) {
    try {
      return await startAuthorization(server.issuer, {
        metadata: asMetadata(server),
        clientInformation: clientInformation(this.deps.secrets, credentials),
        redirectUrl: params.redirectUrl,
        scope: params.scope,
        state: params.state,
        ...(server.resource ? { resource: new URL(server.resource) } : {}),
      });
    } catch (error) {
      throw new McpOAuthError("invalid_metadata", `The authorization request could not be built (${why(error)}).`);
    }
  }

  /**
   * The callback's code for tokens, after the RFC 9207 check: the `iss` the authorization server sent must be the
   * issuer discovered at the start (a mix-up attack otherwise), and must be present when the server says it sends it.
   */
  async exchange(
    server: DiscoveredOAuthServer,
    credentials: Credentials,
    params: { code: string; iss: string | undefined; verifier: string; redirectUrl: string },
  ): Promise<Extract<CredentialData, { kind: "oauth" }>> {
    assertBound(server, credentials);
    const metadata = asMetadata(server);
    try {
      validateAuthorizationResponseIssuer({
        iss: params.iss,
        expectedIssuer: server.issuer,
        issParameterSupported: metadata.authorization_response_iss_parameter_supported === true,
      });
    } catch {
      throw new McpOAuthError(
        "invalid_issuer",
        "The authorization response came from another issuer than the one discovered (RFC 9207 `iss` mismatch).",
      );
    }
    const now = new Date();
    try {
      const tokens = await exchangeAuthorization(server.issuer, {
        metadata,
        clientInformation: clientInformation(this.deps.secrets, credentials),
        authorizationCode: params.code,
        iss: params.iss,
        codeVerifier: params.verifier,
        redirectUri: params.redirectUrl,
        ...(server.resource ? { resource: new URL(server.resource) } : {}),
        fetchFn: this.fetchFn,
      });
      return tokenData(tokens, now, null);
    } catch (error) {
      throw new McpOAuthError(
        error instanceof OAuthError ? error.code : "invalid_token_response",
        `The authorization server did not issue tokens (${why(error)}).`,
      );
    }
  }
}

function tokenData(
  tokens: OAuthTokens,
  now: Date,
  previousRefreshToken: string | null,
): Extract<CredentialData, { kind: "oauth" }> {
  const expiresIn = Number(tokens.expires_in);
  return {
    kind: "oauth",
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token ?? previousRefreshToken,
    token_type: tokens.token_type || "Bearer",
    scope: tokens.scope ?? null,
    expires_at:
      Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(now.getTime() + expiresIn * 1000).toISOString() : null,
  };
}

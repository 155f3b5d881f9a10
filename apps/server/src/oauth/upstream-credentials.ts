import { ApiError } from "@toolplane/server-stubs";
import type { Db } from "../db/database.ts";
import type { CredentialData, JsonObject, Row } from "../db/schema.ts";
import { gatewayLog } from "../observability/gateway.ts";
import { openCredential, sealCredential } from "../resources/provider-auth-configs/credential-data.ts";
import { clientSecretAad } from "../resources/provider-auth-credentials/service.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import { McpOAuthError, refreshMcpTokens } from "./mcp-oauth.ts";
import { type Fetch, requestTokens, TokenEndpointError } from "./token-endpoint.ts";

/** What a runtime needs to call an upstream MCP server on behalf of an auth config. */
export type UpstreamCredential =
  | { kind: "oauth"; accessToken: string; tokenType: string }
  | { kind: "manual"; values: JsonObject };

type OAuthData = Extract<CredentialData, { kind: "oauth" }>;
type RefreshResult =
  | { ok: UpstreamCredential }
  | { failed: "expired" | "refresh_failed"; reason: string }
  /** The authorization server could not refresh right now; the tokens held are kept for the next try. */
  | { retryLater: string; current: OAuthData };

/**
 * A refresh that failed for a reason of the moment (the token endpoint unreachable, or a 5xx / `server_error` /
 * `temporarily_unavailable` answer): nothing says the grant is bad, so the auth config stays active.
 */
const TRANSIENT_CODES = new Set(["temporarily_unavailable", "server_error"]);
const isTransientRefreshError = (err: unknown): err is TokenEndpointError | McpOAuthError =>
  (err instanceof TokenEndpointError || err instanceof McpOAuthError) && TRANSIENT_CODES.has(err.code);

/** An access token with less than this left is refreshed before use, so it does not expire mid-call. */
export const REFRESH_MARGIN_MS = 60_000;

const ENTITY = "provider.auth_config";

export interface UpstreamCredentialsDeps {
  db: Db;
  secrets: SecretBox;
  fetch?: Fetch;
  now?: () => Date;
}

/**
 * The one way the gateway obtains an auth config's credentials before an upstream call. An OAuth access token
 * that has expired (or is about to) is refreshed first, once: concurrent callers in this process share one
 * refresh, and other processes wait on the row lock (`select … for update`) and then read the refreshed token.
 * Failures fail closed: the auth config becomes `refresh_failed` (or `expired` without a refresh token) with a
 * `status_reason`, and the caller gets a clear error without secrets. A failure of the moment (the authorization
 * server down) changes nothing stored: the current access token is used while it lasts, and once it has expired
 * the caller gets a `service_unavailable` error; the next call tries the refresh again.
 */
export class UpstreamCredentials {
  private readonly inflight = new Map<string, Promise<UpstreamCredential>>();
  private readonly fetch: Fetch;
  private readonly now: () => Date;

  constructor(private readonly deps: UpstreamCredentialsDeps) {
    this.fetch = deps.fetch ?? fetch;
    this.now = deps.now ?? (() => new Date());
  }

  async credentialFor(instanceId: string, authConfigId: string): Promise<UpstreamCredential> {
    const row = await this.deps.db
      .selectFrom("provider_auth_configs")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", authConfigId)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, authConfigId);
    const data = this.usable(row);
    if (data.kind === "manual") return { kind: "manual", values: data.values };
    if (!this.needsRefresh(data)) return toCredential(data);
    const key = `${instanceId}:${authConfigId}`;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.refresh(instanceId, authConfigId).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /** The row's decrypted credential data; a config that is not `active` fails closed with its reason. */
  private usable(row: Row<"provider_auth_configs">): CredentialData {
    if (!row.credential_ciphertext || row.status !== "active") {
      const why = row.status_reason ? `: ${row.status_reason}` : ".";
      throw new ApiError("conflict", `Auth config ${row.id} is ${row.status}${why}`, { entity: ENTITY });
    }
    return openCredential(this.deps.secrets, row.id, row.credential_ciphertext);
  }

  private needsRefresh(data: OAuthData) {
    return data.expires_at !== null && Date.parse(data.expires_at) - this.now().getTime() < REFRESH_MARGIN_MS;
  }

  /**
   * Under the row lock: re-read (another process may have refreshed already), call the token endpoint, store
   * the new tokens encrypted. Holding the lock across the HTTP call is what makes the refresh happen once.
   */
  private async refresh(instanceId: string, authConfigId: string): Promise<UpstreamCredential> {
    // The failure is recorded inside the transaction and thrown after it commits (a throw would roll it back).
    const result = await this.deps.db.transaction().execute(async (trx): Promise<RefreshResult> => {
      const row = await trx
        .selectFrom("provider_auth_configs")
        .selectAll()
        .where("instance_id", "=", instanceId)
        .where("id", "=", authConfigId)
        .forUpdate()
        .executeTakeFirst();
      if (!row) throw ApiError.notFound(ENTITY, authConfigId);
      const data = this.usable(row);
      if (data.kind === "manual") return { ok: { kind: "manual", values: data.values } };
      if (!this.needsRefresh(data)) return { ok: toCredential(data) };

      const failClosed = async (status: "expired" | "refresh_failed", reason: string): Promise<RefreshResult> => {
        await trx
          .updateTable("provider_auth_configs")
          .set({ status, status_reason: reason, updated_at: this.now() })
          .where("id", "=", row.id)
          .execute();
        return { failed: status, reason };
      };
      if (!data.refresh_token) {
        return failClosed("expired", "The access token expired and there is no refresh token to renew it.");
      }
      let fresh: OAuthData;
      try {
        fresh = await this.refreshed(trx, row, data.refresh_token);
      } catch (err) {
        if (isTransientRefreshError(err)) return { retryLater: err.reason, current: data };
        if (err instanceof McpOAuthError && err.code === "invalid_grant") {
          return failClosed(
            "refresh_failed",
            "The authorization server refused the refresh token (invalid_grant): the connection needs a new sign-in.",
          );
        }
        if (err instanceof TokenEndpointError || err instanceof McpOAuthError)
          return failClosed("refresh_failed", err.reason);
        throw err;
      }
      await trx
        .updateTable("provider_auth_configs")
        .set({
          credential_ciphertext: sealCredential(this.deps.secrets, row.id, fresh),
          expires_at: fresh.expires_at,
          status: "active",
          status_reason: null,
          updated_at: this.now(),
        })
        .where("id", "=", row.id)
        .execute();
      return { ok: toCredential(fresh) };
    });
    if ("ok" in result) return result.ok;
    if ("retryLater" in result) {
      const { current, retryLater: reason } = result;
      const usable = current.expires_at === null || Date.parse(current.expires_at) > this.now().getTime();
      gatewayLog()?.warn({ authConfigId, reason, usingCurrentToken: usable }, "OAuth token refresh failed for now");
      if (usable) return toCredential(current);
      throw new ApiError(
        "service_unavailable",
        `The access token of auth config ${authConfigId} expired and could not be refreshed right now: ${reason} ` +
          "The auth config stays active; the next request tries again.",
        { entity: ENTITY },
      );
    }
    gatewayLog()?.warn({ authConfigId, status: result.failed, reason: result.reason }, "OAuth token refresh failed");
    throw new ApiError(
      result.failed === "expired" ? "conflict" : "bad_gateway",
      `The access token of auth config ${authConfigId} could not be refreshed: ${result.reason}`,
      { entity: ENTITY },
    );
  }

  /**
   * New tokens for the row's refresh token. MCP OAuth tokens go back to the issuer they are bound to, with the
   * client registered there; other OAuth tokens to the method's token endpoint with the deployment's OAuth app.
   */
  private async refreshed(trx: Db, row: Row<"provider_auth_configs">, refreshToken: string): Promise<OAuthData> {
    const method = await trx
      .selectFrom("provider_auth_methods")
      .select("oauth")
      .where("id", "=", row.provider_auth_method_id)
      .executeTakeFirst();
    const credentials = row.provider_auth_credentials_id
      ? await trx
          .selectFrom("provider_auth_credentials")
          .selectAll()
          .where("id", "=", row.provider_auth_credentials_id)
          .executeTakeFirst()
      : undefined;
    if (row.oauth_server && credentials) {
      if (row.issuer !== row.oauth_server.issuer) {
        throw new McpOAuthError("invalid_issuer", "The tokens are bound to another issuer than the one stored.");
      }
      return refreshMcpTokens(
        { secrets: this.deps.secrets, fetch: this.fetch },
        row.oauth_server,
        credentials,
        refreshToken,
        this.now(),
      );
    }
    if (!method?.oauth || !credentials?.client_secret_ciphertext) {
      throw new TokenEndpointError(
        "The auth config has no OAuth app (auth credentials) or token endpoint to refresh with.",
        "invalid_client",
      );
    }
    return requestTokens(
      this.fetch,
      method.oauth.token_endpoint,
      {
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: credentials.client_id,
        client_secret: this.deps.secrets.decrypt(credentials.client_secret_ciphertext, clientSecretAad(credentials.id)),
        ...(method.oauth.resource ? { resource: method.oauth.resource } : {}),
      },
      { now: this.now(), previousRefreshToken: refreshToken },
    );
  }
}

const toCredential = (data: OAuthData): UpstreamCredential => ({
  kind: "oauth",
  accessToken: data.access_token,
  tokenType: data.token_type,
});

import { timingSafeEqual } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import type { Logger } from "pino";
import type { Db } from "../db/database.ts";
import type { CredentialData, DiscoveredOAuthServer, JsonObject, OAuthFlowStatus, Row } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import { assertMatchesSchema } from "../lib/json-schema.ts";
import { sealCredential } from "../resources/provider-auth-configs/credential-data.ts";
import { clientSecretAad } from "../resources/provider-auth-credentials/service.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import { EXPIRED_REASON, effectiveStatus, type FlowRow, kindOfPageSegment } from "./flows.ts";
import { discover, McpOAuthClient, McpOAuthError, remoteServerUrl } from "./mcp-oauth.ts";
import {
  type Fetch,
  randomToken,
  requestTokens,
  s256Challenge,
  sha256Hex,
  TokenEndpointError,
} from "./token-endpoint.ts";

/** Authorization parameters this server sets itself; a setup's extra parameters cannot override them. */
export const RESERVED_AUTHORIZE_PARAMS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "scope",
  "state",
  "code_challenge",
  "code_challenge_method",
];

/** The cookie that ties a browser to the flow it started, so a callback with a foreign `state` fails that flow. */
export const FLOW_COOKIE = "toolplane_oauth_flow";

/** What a page request answers: a redirect, or a small HTML page built from plain text. */
export type PageResult =
  | { type: "redirect"; location: string; cookie?: string }
  | { type: "page"; status: number; title: string; message: string }
  | { type: "form"; title: string; fields: { name: string; label: string; required: boolean }[] };

const notFoundPage: PageResult = {
  type: "page",
  status: 404,
  title: "Link not valid",
  message: "This setup link is not valid. Ask for a new one.",
};

const ENDED_TEXT: Record<"completed" | "failed" | "expired", string> = {
  completed: "This setup is already complete. You can close this window.",
  failed: "This setup has failed. Ask for a new setup link.",
  expired: "This setup link has expired. Ask for a new one.",
};

const safeEqual = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** OAuth error codes are ASCII words (RFC 6749 §4.1.2.1); anything else is not echoed. */
const oauthErrorCode = (value: unknown) =>
  typeof value === "string" && /^[\w.-]{1,64}$/.test(value) ? value : "server_error";

/** A flow still waiting for the user; final states never change again. */
const UNFINISHED: OAuthFlowStatus[] = ["pending", "opened"];

const verifierAad = (flowId: string) => `oauth_flows:${flowId}`;

export interface FlowRunnerDeps {
  db: Db;
  secrets: SecretBox;
  publicUrl: string;
  fetch?: Fetch;
  /** Where each flow's outcome (completed, failed, expired) is logged. */
  logger?: Logger;
}

/**
 * The browser side of OAuth setups and setup sessions: the start page (redirect to the authorization endpoint
 * with state and PKCE S256, or a token form), the OAuth callback (state check, code exchange, auth config) and
 * the final redirect. Every failure ends the flow `failed` with a reason safe to show; none echoes a secret.
 */
export class OAuthFlowRunner {
  private readonly fetch: Fetch;
  private readonly mcp: McpOAuthClient;

  constructor(private readonly deps: FlowRunnerDeps) {
    this.fetch = deps.fetch ?? fetch;
    this.mcp = new McpOAuthClient({ ...deps, fetch: this.fetch });
  }

  get callbackUrl() {
    return `${this.deps.publicUrl}/oauth/callback`;
  }

  /** GET of a flow's `url`. */
  async start(segment: string, id: string, key: unknown): Promise<PageResult> {
    const row = await this.byLink(segment, id, key);
    if (!row) return notFoundPage;
    const ended = await this.endedPage(row);
    if (ended) return ended;
    const method = await this.method(row.provider_auth_method_id);
    if (!method) return this.fail(row, "server_error", "The auth method of this setup no longer exists.");
    if (method.type === "token") {
      await this.markOpened(row, {});
      return { type: "form", title: method.name, fields: formFields(method.input_schema) };
    }
    if (method.type === "mcp_oauth") return this.startMcp(row, method);
    const credentials = row.provider_auth_credentials_id
      ? await this.credentials(row.provider_auth_credentials_id)
      : undefined;
    if (!method.oauth || !credentials) {
      return this.fail(row, "server_error", "The OAuth app (auth credentials) of this setup no longer exists.");
    }
    const state = randomToken();
    const verifier = randomToken();
    await this.markOpened(row, {
      state_hash: sha256Hex(state),
      state_used_at: null,
      verifier_ciphertext: this.deps.secrets.encrypt(verifier, verifierAad(row.id)),
    });
    // The setup's scopes, else the OAuth app's, else the method's defaults.
    const scopes = [row.config.scopes ?? [], credentials.scopes, method.scopes.map((s) => s.scope)].find(
      (list) => list.length > 0,
    );
    const url = new URL(method.oauth.authorization_endpoint);
    const extras = {
      ...method.oauth.extra_authorize_params,
      ...(method.oauth.resource ? { resource: method.oauth.resource } : {}),
      ...row.config.extra_authorize_params,
    };
    for (const [name, value] of Object.entries(extras)) url.searchParams.set(name, value);
    const scope = scopes?.join(" ") ?? "";
    const ours: Record<string, string> = {
      response_type: "code",
      client_id: credentials.client_id,
      redirect_uri: this.callbackUrl,
      ...(scope ? { scope } : {}),
      state,
      code_challenge: s256Challenge(verifier),
      code_challenge_method: "S256",
    };
    for (const [name, value] of Object.entries(ours)) url.searchParams.set(name, value);
    return this.toAuthorization(row, url);
  }

  /** The redirect to an authorization endpoint, with the cookie that ties this browser to the flow. */
  private toAuthorization(row: FlowRow, url: URL): PageResult {
    const secure = this.deps.publicUrl.startsWith("https:") ? "; Secure" : "";
    return {
      type: "redirect",
      location: url.href,
      cookie: `${FLOW_COOKIE}=${row.id}; Path=/oauth/callback; Max-Age=3600; HttpOnly; SameSite=Lax${secure}`,
    };
  }

  /**
   * MCP OAuth's start: discovery and client registration happen now (not at creation), so a setup link always
   * runs against the server's current metadata; what was found is kept on the flow for its callback.
   */
  private async startMcp(row: FlowRow, method: Row<"provider_auth_methods">): Promise<PageResult> {
    const state = randomToken();
    let location: URL;
    try {
      const { server, scope } = await discover(
        await remoteServerUrl(this.deps.db, row.provider_deployment_id),
        this.fetch,
      );
      await this.assertRepairable(row, server.issuer);
      const credentials = await this.mcp.clientFor(row, server);
      const requested = row.config.scopes?.length
        ? row.config.scopes.join(" ")
        : (scope ?? method.scopes.map((s) => s.scope).join(" "));
      const { authorizationUrl, codeVerifier } = await this.mcp.authorizationUrl(server, credentials, {
        state,
        scope: requested || undefined,
        redirectUrl: this.callbackUrl,
      });
      location = authorizationUrl;
      for (const [name, value] of Object.entries(row.config.extra_authorize_params ?? {})) {
        if (!location.searchParams.has(name)) location.searchParams.set(name, value);
      }
      await this.markOpened(row, {
        state_hash: sha256Hex(state),
        state_used_at: null,
        verifier_ciphertext: this.deps.secrets.encrypt(codeVerifier, verifierAad(row.id)),
        provider_auth_credentials_id: credentials.id,
        oauth_server: JSON.stringify(server),
      });
    } catch (err) {
      if (!(err instanceof McpOAuthError)) throw err;
      return this.fail(row, err.code, err.reason);
    }
    return this.toAuthorization(row, location);
  }

  /**
   * A re-authentication signs in at the issuer the auth config is bound to, or not at all: the MCP server naming
   * another authorization server since is a new connection to make with a new setup session, not a repair.
   */
  private async assertRepairable(row: FlowRow, issuer: string) {
    if (!row.repairs_provider_auth_config_id) return;
    const config = await this.deps.db
      .selectFrom("provider_auth_configs")
      .select("issuer")
      .where("id", "=", row.repairs_provider_auth_config_id)
      .executeTakeFirst();
    if (config?.issuer !== issuer) throw issuerChanged();
  }

  /** POST of a token method's form (setup sessions): the values become a `manual` auth config. */
  async submitToken(segment: string, id: string, key: unknown, form: Record<string, unknown>): Promise<PageResult> {
    const row = await this.byLink(segment, id, key);
    if (!row) return notFoundPage;
    const ended = await this.endedPage(row);
    if (ended) return ended;
    const method = await this.method(row.provider_auth_method_id);
    if (method?.type !== "token") return notFoundPage;
    const values: JsonObject = {};
    for (const field of formFields(method.input_schema)) {
      const value = form[field.name];
      if (typeof value === "string" && value !== "") values[field.name] = value;
    }
    try {
      assertMatchesSchema(method.input_schema, values, { pathPrefix: [], entity: "body", what: "The entered values" });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return this.fail(row, "invalid_request", `The entered values are not valid: ${err.message}`);
    }
    return this.complete(row, method, { kind: "manual", values }, null);
  }

  /** GET /oauth/callback: the provider's redirect back, with `code` and `state` (or `error`). */
  async callback(query: Record<string, unknown>, cookieFlowId: string | undefined): Promise<PageResult> {
    const state = typeof query.state === "string" ? query.state : "";
    const row = state
      ? await this.deps.db
          .selectFrom("oauth_flows")
          .selectAll()
          .where("state_hash", "=", sha256Hex(state))
          .executeTakeFirst()
      : undefined;
    if (!row) return this.foreignState(cookieFlowId);
    if (row.state_used_at || row.status !== "opened") return this.endedFor(row, alreadyUsed);
    const expired = await this.endedPage(row);
    if (expired) return expired;
    // Single use: only the request that stamps state_used_at goes on; a replay finds it stamped.
    const claimed = await this.deps.db
      .updateTable("oauth_flows")
      .set({ state_used_at: new Date(), updated_at: new Date() })
      .where("id", "=", row.id)
      .where("state_hash", "=", row.state_hash)
      .where("state_used_at", "is", null)
      .where("status", "=", "opened")
      .returningAll()
      .executeTakeFirst();
    if (!claimed) return this.endedFor(row, alreadyUsed);
    if (query.error !== undefined) {
      const code = oauthErrorCode(query.error);
      const reason =
        code === "access_denied"
          ? "The user denied consent (access_denied)."
          : `The provider did not authorize the request (${code}).`;
      return this.fail(claimed, code, reason);
    }
    if (typeof query.code !== "string" || !query.code) {
      return this.fail(claimed, "invalid_request", "The provider's answer had no authorization code.");
    }
    const method = await this.method(claimed.provider_auth_method_id);
    const credentials = claimed.provider_auth_credentials_id
      ? await this.credentials(claimed.provider_auth_credentials_id)
      : undefined;
    if (method?.type === "mcp_oauth" && credentials && claimed.oauth_server && claimed.verifier_ciphertext) {
      const server = claimed.oauth_server;
      try {
        const tokens = await this.mcp.exchange(server, credentials, {
          code: query.code,
          iss: typeof query.iss === "string" ? query.iss : undefined,
          verifier: this.deps.secrets.decrypt(claimed.verifier_ciphertext, verifierAad(claimed.id)),
          redirectUrl: this.callbackUrl,
        });
        return this.complete(claimed, method, tokens, credentials.id, server);
      } catch (err) {
        if (!(err instanceof McpOAuthError)) throw err;
        return this.fail(claimed, err.code, err.reason);
      }
    }
    if (!method?.oauth || !credentials?.client_secret_ciphertext || !claimed.verifier_ciphertext) {
      return this.fail(claimed, "server_error", "The auth method or OAuth app of this setup no longer exists.");
    }
    let tokens: CredentialData;
    try {
      tokens = await requestTokens(
        this.fetch,
        method.oauth.token_endpoint,
        {
          grant_type: "authorization_code",
          code: query.code,
          redirect_uri: this.callbackUrl,
          client_id: credentials.client_id,
          client_secret: this.deps.secrets.decrypt(
            credentials.client_secret_ciphertext,
            clientSecretAad(credentials.id),
          ),
          code_verifier: this.deps.secrets.decrypt(claimed.verifier_ciphertext, verifierAad(claimed.id)),
          ...(method.oauth.resource ? { resource: method.oauth.resource } : {}),
        },
        { now: new Date() },
      );
    } catch (err) {
      if (!(err instanceof TokenEndpointError)) throw err;
      return this.fail(claimed, err.code, `The provider did not issue tokens: ${err.reason}`);
    }
    return this.complete(claimed, method, tokens, credentials.id);
  }

  /** A callback whose state names no flow: fail the flow this browser started, if it says which. */
  private async foreignState(cookieFlowId: string | undefined): Promise<PageResult> {
    const row = cookieFlowId
      ? await this.deps.db.selectFrom("oauth_flows").selectAll().where("id", "=", cookieFlowId).executeTakeFirst()
      : undefined;
    if (row && effectiveStatus(row).status === "opened") {
      return this.fail(row, "invalid_state", "The OAuth state did not match this setup (missing, wrong or replaced).");
    }
    return {
      type: "page",
      status: 400,
      title: "Sign-in not recognised",
      message:
        "This sign-in answer does not belong to a setup in progress: its state is missing, unknown or was " +
        "replaced by a newer attempt. Start again from your setup link.",
    };
  }

  private async byLink(segment: string, id: string, key: unknown): Promise<FlowRow | undefined> {
    const kind = kindOfPageSegment(segment);
    if (!kind || typeof key !== "string") return undefined;
    const row = await this.deps.db
      .selectFrom("oauth_flows")
      .selectAll()
      .where("id", "=", id)
      .where("kind", "=", kind)
      .executeTakeFirst();
    return row && safeEqual(row.start_key, key) ? row : undefined;
  }

  /** The page of a flow that has ended (recording `expired` when its time ran out), or undefined. */
  private async endedPage(row: FlowRow): Promise<PageResult | undefined> {
    const { status } = effectiveStatus(row);
    if (status === "pending" || status === "opened") return undefined;
    if (status === "expired" && row.status !== "expired") return this.fail(row, "expired", EXPIRED_REASON, "expired");
    return this.endedFor(row, { type: "page", status: 410, title: "Setup ended", message: ENDED_TEXT[status] });
  }

  /**
   * A portal's flow (one started for a consumer) ends on the portal's own page, in its brand, in whatever state it
   * is found: the portal reads the outcome from the flow, not from the redirect. Other flows get this server's page.
   */
  private endedFor(row: FlowRow, page: PageResult): PageResult {
    if (!row.consumer_id || !row.redirect_url) return page;
    return this.outcome(row, { status: effectiveStatus(row).status === "completed" ? "completed" : "failed" });
  }

  private async markOpened(
    row: FlowRow,
    set: Partial<
      Pick<FlowRow, "state_hash" | "state_used_at" | "verifier_ciphertext" | "provider_auth_credentials_id">
    > & { oauth_server?: string },
  ) {
    await this.deps.db
      .updateTable("oauth_flows")
      .set({ ...set, status: "opened", updated_at: new Date() })
      .where("id", "=", row.id)
      .where("status", "in", UNFINISHED)
      .execute();
  }

  private method(id: string) {
    return this.deps.db.selectFrom("provider_auth_methods").selectAll().where("id", "=", id).executeTakeFirst();
  }

  private credentials(id: string) {
    return this.deps.db.selectFrom("provider_auth_credentials").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** Ends the flow `failed` (or `expired`) and tells the user; an ephemeral setup is deleted instead. */
  private async fail(
    row: FlowRow,
    code: string,
    reason: string,
    status: OAuthFlowStatus = "failed",
  ): Promise<PageResult> {
    const query = row.is_ephemeral
      ? this.deps.db.deleteFrom("oauth_flows").where("id", "=", row.id).where("status", "in", UNFINISHED)
      : this.deps.db
          .updateTable("oauth_flows")
          .set({ status, failure_reason: reason, verifier_ciphertext: null, updated_at: new Date() })
          .where("id", "=", row.id)
          .where("status", "in", UNFINISHED);
    await query.execute();
    // The reason is the one shown to the user and stored on the flow: it never quotes a secret.
    this.deps.logger?.warn({ flowId: row.id, kind: row.kind, code, reason }, `OAuth setup ${status}`);
    return this.outcome(row, { status: "failed", error: code, error_description: reason });
  }

  /** One transaction: the auth config with the encrypted credentials, and the flow `completed` (or deleted). */
  private async complete(
    row: FlowRow,
    method: Row<"provider_auth_methods">,
    data: CredentialData,
    credentialsId: string | null,
    server: DiscoveredOAuthServer | null = null,
  ): Promise<PageResult> {
    const now = new Date();
    const repairs = row.repairs_provider_auth_config_id;
    const authConfigId = repairs ?? newId("pac");
    const credential = {
      // A repaired config was signed in by this flow now, whatever it was before (an imported token, say).
      type: data.kind === "oauth" ? ("oauth_automated" as const) : ("manual" as const),
      provider_auth_credentials_id: credentialsId,
      status: "active" as const,
      status_reason: null,
      credential_ciphertext: sealCredential(this.deps.secrets, authConfigId, data),
      oauth_server: server && JSON.stringify(server),
      expires_at: data.kind === "oauth" ? data.expires_at : null,
    };
    const finished = await this.deps.db
      .transaction()
      .execute(async (trx) => {
        if (repairs) {
          // The same auth config, still bound to its issuer (checked at the start, and again here in case the
          // config changed meanwhile): its id and the sessions that reference it stay.
          const repaired = await trx
            .updateTable("provider_auth_configs")
            .set({ ...credential, updated_at: now })
            .where("id", "=", repairs)
            .where("issuer", "is not distinct from", server?.issuer ?? null)
            .executeTakeFirst();
          if (repaired.numUpdatedRows === 0n) throw issuerChanged();
        } else {
          await trx
            .insertInto("provider_auth_configs")
            .values({
              id: authConfigId,
              instance_id: row.instance_id,
              provider_id: row.provider_id,
              provider_deployment_id: row.provider_deployment_id,
              provider_auth_method_id: method.id,
              ...credential,
              issuer: server?.issuer ?? null,
              name: row.name ?? method.name,
              description: row.description,
              metadata: row.metadata === null ? null : JSON.stringify(row.metadata),
              consumer_id: row.consumer_id,
              created_at: now,
              updated_at: now,
            })
            .execute();
        }
        // Only a still-unfinished flow completes (a concurrent submit, or a delete, got there first otherwise).
        const done = row.is_ephemeral
          ? await trx
              .deleteFrom("oauth_flows")
              .where("id", "=", row.id)
              .where("status", "in", UNFINISHED)
              .executeTakeFirst()
          : await trx
              .updateTable("oauth_flows")
              .set({
                status: "completed",
                failure_reason: null,
                provider_auth_config_id: authConfigId,
                verifier_ciphertext: null,
                updated_at: now,
              })
              .where("id", "=", row.id)
              .where("status", "in", UNFINISHED)
              .executeTakeFirst();
        const rows = "numDeletedRows" in done ? done.numDeletedRows : done.numUpdatedRows;
        // Thrown to roll the auth config back.
        if (rows === 0n) throw new FlowAlreadyFinished();
        return true;
      })
      .catch((err: unknown) => {
        if (err instanceof FlowAlreadyFinished || err instanceof McpOAuthError) return err;
        throw err;
      });
    if (finished instanceof McpOAuthError) return this.fail(row, finished.code, finished.reason);
    if (finished instanceof FlowAlreadyFinished) return this.endedFor(row, alreadyUsed);
    this.deps.logger?.info(
      { flowId: row.id, kind: row.kind, providerAuthConfigId: authConfigId, type: data.kind },
      "OAuth setup completed",
    );
    return this.outcome(row, { status: "completed", provider_auth_config_id: authConfigId });
  }

  /** Back to the app's `redirect_url` with the outcome in the query, or this server's own result page. */
  private outcome(row: FlowRow, result: Record<string, string>): PageResult {
    if (row.redirect_url) {
      const url = new URL(row.redirect_url);
      const idParam = row.kind === "oauth_setup" ? "provider_oauth_setup_id" : "provider_setup_session_id";
      url.searchParams.set(idParam, row.id);
      for (const [name, value] of Object.entries(result)) url.searchParams.set(name, value);
      return { type: "redirect", location: url.href };
    }
    if (result.status === "completed") {
      return {
        type: "page",
        status: 200,
        title: "Connected",
        message: "You are connected. You can close this window.",
      };
    }
    return {
      type: "page",
      status: 400,
      title: "Setup failed",
      message: result.error_description ?? "The setup failed.",
    };
  }
}

class FlowAlreadyFinished extends Error {}

const issuerChanged = () =>
  new McpOAuthError(
    "invalid_issuer",
    "The MCP server now names another authorization server than the one this connection is bound to; connect it " +
      "with a new setup session instead.",
  );

/** A replayed callback never changes the flow; it only says so. */
const alreadyUsed: PageResult = {
  type: "page",
  status: 400,
  title: "Sign-in already used",
  message: "This sign-in answer was already used, or its setup has ended. Start again from your setup link.",
};

/** The form fields of a token method: the top-level properties of its input schema. */
function formFields(schema: JsonObject) {
  const properties = (schema.properties ?? {}) as Record<string, { title?: unknown; description?: unknown }>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return Object.entries(properties).map(([name, p]) => ({
    name,
    label: typeof p.description === "string" ? p.description : typeof p.title === "string" ? p.title : name,
    required: required.includes(name),
  }));
}

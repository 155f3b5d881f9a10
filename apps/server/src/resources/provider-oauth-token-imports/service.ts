import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { CredentialData, DiscoveredOAuthServer, Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso, isoOrNull, storableInstant } from "../../lib/time.ts";
import { discover, McpOAuthError, remoteServerUrl } from "../../oauth/mcp-oauth.ts";
import { sha256Hex } from "../../oauth/token-endpoint.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { openCredential, sealCredential } from "../provider-auth-configs/credential-data.ts";
import type { DeploymentRef, ProviderDeploymentService } from "../provider-deployments/service.ts";

type TokenImport = components["schemas"]["ProviderOAuthTokenImport"];
type TokenImportCreate = components["schemas"]["ProviderOAuthTokenImportCreate"];
type TokenImportUpdate = components["schemas"]["ProviderOAuthTokenImportUpdate"];
type ImportRow = Row<"provider_oauth_token_imports">;

const ENTITY = "provider_oauth.import";
const accessTokenAad = (id: string) => `provider_oauth_token_imports:${id}:access_token`;
const idTokenAad = (id: string) => `provider_oauth_token_imports:${id}:id_token`;

/** A wire date-time as a storable instant; a 400 naming the field otherwise. */
function instant(value: string, field: string): Date {
  const date = storableInstant(value);
  if (date) return date;
  const message = "is a date-time that cannot be stored (a leap second or a year before 0001)";
  throw new ApiError("invalid_data", `${field} ${message}.`, {
    entity: "body",
    errors: [{ code: "format", message, path: [field] }],
  });
}

/**
 * OAuth access tokens obtained elsewhere, imported as a connection's (auth config's) credentials. The token is
 * encrypted on the import (so a later PATCH can replace it) and sealed into the auth config, which is what the
 * gateway uses; an import has no refresh token, so it simply expires.
 */
export class ProviderOAuthTokenImportService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly deployments: ProviderDeploymentService,
  ) {}

  /**
   * `revoked` when it no longer backs its connection (a later import, an auth import or an OAuth flow replaced
   * the connection's token, or the connection is gone); then `expired` past expires_at.
   */
  private toApi(row: ImportRow, backing: boolean, idToken: string | null = null): TokenImport {
    const expired = row.expires_at !== null && row.expires_at.getTime() <= Date.now();
    return {
      object: "provider_oauth.import",
      id: row.id,
      status: row.revoked_at || !backing ? "revoked" : expired ? "expired" : "active",
      note: row.note,
      metadata: row.metadata,
      connection_id: row.provider_auth_config_id,
      server_deployment_id: row.provider_deployment_id,
      id_token: idToken,
      scope: row.scope,
      token_type: row.token_type,
      identifier: row.identifier,
      created_at: iso(row.created_at),
      expires_at: isoOrNull(row.expires_at),
    };
  }

  /** The imports that still hold their connection's current access token (compared by its hash). */
  private async backing(db: Db, rows: ImportRow[]): Promise<Set<string>> {
    const ids = [...new Set(rows.map((r) => r.provider_auth_config_id))];
    if (!ids.length) return new Set();
    const connections = await db
      .selectFrom("provider_auth_configs")
      .select(["id", "credential_ciphertext"])
      .where("id", "in", ids)
      .execute();
    const current = new Map<string, string>();
    for (const c of connections) {
      if (!c.credential_ciphertext) continue;
      const data = openCredential(this.secrets, c.id, c.credential_ciphertext);
      if (data.kind === "oauth") current.set(c.id, sha256Hex(data.access_token));
    }
    return new Set(rows.filter((r) => current.get(r.provider_auth_config_id) === r.identifier).map((r) => r.id));
  }

  async list(instanceId: string, params: ListParams) {
    const query = this.db.selectFrom("provider_oauth_token_imports").selectAll().where("instance_id", "=", instanceId);
    const { rows, pagination } = await paginate(query, "provider_oauth_token_imports.id", params);
    const backing = await this.backing(this.db, rows);
    return { items: rows.map((r) => this.toApi(r, backing.has(r.id))), pagination };
  }

  private async find(instanceId: string, id: string) {
    const row = await this.db
      .selectFrom("provider_oauth_token_imports")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return row;
  }

  async get(instanceId: string, id: string) {
    const row = await this.find(instanceId, id);
    return this.toApi(row, (await this.backing(this.db, [row])).has(row.id));
  }

  async create(instanceId: string, body: TokenImportCreate): Promise<TokenImport> {
    const hasDeployment = body.server_deployment_id !== undefined;
    if (hasDeployment === (body.connection_id !== undefined)) {
      const message = hasDeployment
        ? "Give either server_deployment_id or connection_id, not both: they are mutually exclusive."
        : "Give exactly one of server_deployment_id (a new connection for that deployment) or connection_id (an existing connection).";
      throw new ApiError("bad_request", message, { entity: "body" });
    }
    const expiresAt = body.expires_at === undefined ? null : instant(body.expires_at, "expires_at");
    const deployment = body.server_deployment_id
      ? await this.deployments.ref(instanceId, body.server_deployment_id)
      : undefined;
    // An MCP OAuth connection is bound to the issuer discovered from its server (as the OAuth flow binds it),
    // found before the transaction: discovery is a network call.
    const target = deployment
      ? { ...(await this.oauthMethod(deployment)), issuer: null, provider_deployment_id: deployment.id }
      : await this.connection(this.db, instanceId, body.connection_id ?? "");
    const server =
      target.type === "mcp_oauth" && target.issuer === null
        ? await this.discovered(target.provider_deployment_id)
        : null;
    const id = newId("poti");
    const now = new Date();
    const row = await this.db.transaction().execute(async (trx) => {
      const connection = deployment
        ? await this.newConnection(trx, deployment, target.id, server, body.note ?? null, now)
        : await this.existingConnection(trx, instanceId, body.connection_id ?? "", server);
      await trx
        .updateTable("provider_oauth_token_imports")
        .set({ revoked_at: now, updated_at: now })
        .where("provider_auth_config_id", "=", connection.id)
        .where("revoked_at", "is", null)
        .execute();
      const inserted = await trx
        .insertInto("provider_oauth_token_imports")
        .values({
          id,
          instance_id: instanceId,
          provider_auth_config_id: connection.id,
          provider_deployment_id: connection.provider_deployment_id,
          access_token_ciphertext: this.secrets.encrypt(body.access_token, accessTokenAad(id)),
          id_token_ciphertext: body.id_token ? this.secrets.encrypt(body.id_token, idTokenAad(id)) : null,
          identifier: sha256Hex(body.access_token),
          scope: body.scope ?? null,
          token_type: body.token_type ?? null,
          note: body.note ?? null,
          metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
          expires_at: expiresAt,
          revoked_at: null,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await this.sealInto(trx, inserted, body.access_token, now);
      return inserted;
    });
    return this.toApi(row, true, body.id_token ?? null);
  }

  async update(instanceId: string, id: string, body: TokenImportUpdate): Promise<TokenImport> {
    const expiresAt =
      body.expires_at === undefined || body.expires_at === null
        ? body.expires_at
        : instant(body.expires_at, "expires_at");
    const now = new Date();
    const row = await this.db.transaction().execute(async (trx) => {
      const current = await trx
        .selectFrom("provider_oauth_token_imports")
        .selectAll()
        .where("instance_id", "=", instanceId)
        .where("id", "=", id)
        .forUpdate()
        .executeTakeFirst();
      if (!current) throw ApiError.notFound(ENTITY, id);
      if (current.revoked_at || !(await this.backing(trx, [current])).has(current.id)) {
        throw new ApiError(
          "conflict",
          `OAuth token import ${id} is revoked (its connection's credentials were replaced or the connection was deleted); import the token again instead.`,
          { entity: ENTITY },
        );
      }
      const updated = await trx
        .updateTable("provider_oauth_token_imports")
        .set({
          ...(body.note === undefined ? {} : { note: body.note }),
          ...(body.metadata === undefined
            ? {}
            : { metadata: body.metadata === null ? null : JSON.stringify(body.metadata) }),
          ...(body.scope === undefined ? {} : { scope: body.scope }),
          ...(body.token_type === undefined ? {} : { token_type: body.token_type }),
          ...(body.id_token === undefined
            ? {}
            : {
                id_token_ciphertext:
                  body.id_token === null ? null : this.secrets.encrypt(body.id_token, idTokenAad(id)),
              }),
          ...(body.access_token === undefined
            ? {}
            : {
                access_token_ciphertext: this.secrets.encrypt(body.access_token, accessTokenAad(id)),
                identifier: sha256Hex(body.access_token),
                // The old expiry belongs to the old token.
                expires_at: expiresAt ?? null,
              }),
          ...(body.access_token === undefined && expiresAt !== undefined ? { expires_at: expiresAt } : {}),
          updated_at: now,
        })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      const tokenChanged = ["access_token", "expires_at", "scope", "token_type"].some(
        (k) => body[k as keyof TokenImportUpdate] !== undefined,
      );
      if (tokenChanged) {
        const token = body.access_token ?? this.secrets.decrypt(updated.access_token_ciphertext, accessTokenAad(id));
        await this.sealInto(trx, updated, token, now);
      }
      return updated;
    });
    return this.toApi(row, true);
  }

  /** Makes the import's token its connection's credentials (no refresh token: it is used until it expires). */
  private async sealInto(trx: Db, row: ImportRow, accessToken: string, now: Date) {
    const data: CredentialData = {
      kind: "oauth",
      access_token: accessToken,
      refresh_token: null,
      token_type: row.token_type ?? "Bearer",
      scope: row.scope,
      expires_at: row.expires_at === null ? null : iso(row.expires_at),
    };
    const expired = row.expires_at !== null && row.expires_at.getTime() <= now.getTime();
    await trx
      .updateTable("provider_auth_configs")
      .set({
        type: "oauth_manual",
        status: expired ? "expired" : "active",
        status_reason: expired ? "The imported access token has expired and there is no refresh token." : null,
        credential_ciphertext: sealCredential(this.secrets, row.provider_auth_config_id, data),
        expires_at: data.expires_at,
        updated_at: now,
      })
      .where("id", "=", row.provider_auth_config_id)
      .execute();
  }

  /** The provider's first OAuth or MCP OAuth method, which a new connection of the deployment uses. */
  private async oauthMethod(deployment: DeploymentRef) {
    const method = await this.db
      .selectFrom("provider_auth_methods")
      .select(["id", "type"])
      .where("provider_id", "=", deployment.providerId)
      .where("type", "in", ["oauth", "mcp_oauth"])
      .orderBy("id")
      .executeTakeFirst();
    if (method) return method;
    throw new ApiError("invalid_data", `The provider of deployment ${deployment.id} has no OAuth auth method.`, {
      entity: "body",
      errors: [
        {
          code: "not_oauth",
          message: "the deployment's provider has no oauth or mcp_oauth auth method",
          path: ["server_deployment_id"],
        },
      ],
    });
  }

  /** The authorization server of the deployment's MCP server, or a 502 saying why it could not be found. */
  private async discovered(deploymentId: string): Promise<DiscoveredOAuthServer> {
    try {
      return (await discover(await remoteServerUrl(this.db, deploymentId), fetch)).server;
    } catch (err) {
      if (!(err instanceof McpOAuthError)) throw err;
      throw new ApiError(
        "bad_gateway",
        `The issuer to bind the token to could not be discovered from the deployment's MCP server: ${err.reason}`,
        { entity: "body" },
      );
    }
  }

  /** A new `oauth_manual` connection for the deployment (filled in by sealInto in the same transaction). */
  private newConnection(
    trx: Db,
    deployment: DeploymentRef,
    methodId: string,
    server: DiscoveredOAuthServer | null,
    note: string | null,
    now: Date,
  ) {
    return trx
      .insertInto("provider_auth_configs")
      .values({
        id: newId("pac"),
        instance_id: deployment.instanceId,
        provider_id: deployment.providerId,
        provider_deployment_id: deployment.id,
        provider_auth_method_id: methodId,
        provider_auth_credentials_id: null,
        type: "oauth_manual",
        status: "pending",
        status_reason: null,
        credential_ciphertext: null,
        issuer: server?.issuer ?? null,
        oauth_server: server && JSON.stringify(server),
        expires_at: null,
        name: note ?? "Imported OAuth token",
        description: null,
        metadata: null,
        created_at: now,
        updated_at: now,
      })
      .returning(["id", "provider_deployment_id"])
      .executeTakeFirstOrThrow();
  }

  /** An OAuth or MCP OAuth connection of the instance, with its method type and the issuer it is bound to. */
  private async connection(db: Db, instanceId: string, connectionId: string, lock = false) {
    let query = db
      .selectFrom("provider_auth_configs as c")
      .innerJoin("provider_auth_methods as m", "m.id", "c.provider_auth_method_id")
      .select(["c.id", "c.provider_deployment_id", "c.issuer", "m.type"])
      .where("c.instance_id", "=", instanceId)
      .where("c.id", "=", connectionId);
    if (lock) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    if (!row) throw ApiError.notFound("provider.auth_config", connectionId);
    if (row.type !== "oauth" && row.type !== "mcp_oauth") {
      throw new ApiError("invalid_data", `Connection ${connectionId} uses a token auth method, not OAuth.`, {
        entity: "body",
        errors: [{ code: "not_oauth", message: "is not an OAuth connection", path: ["connection_id"] }],
      });
    }
    return row;
  }

  /** The connection, locked; an MCP OAuth one not bound yet is bound to `server`'s issuer. */
  private async existingConnection(
    trx: Db,
    instanceId: string,
    connectionId: string,
    server: DiscoveredOAuthServer | null,
  ) {
    const row = await this.connection(trx, instanceId, connectionId, true);
    if (server && row.issuer === null) {
      await trx
        .updateTable("provider_auth_configs")
        .set({ issuer: server.issuer, oauth_server: JSON.stringify(server) })
        .where("id", "=", row.id)
        .execute();
    }
    return row;
  }
}

import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { assertMatchesSchema } from "../../lib/json-schema.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso, storableInstant } from "../../lib/time.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { credentialFromImport, importSchema, sealCredential } from "../provider-auth-configs/credential-data.ts";
import type { AuthConfigScope } from "../provider-auth-configs/scope.ts";

type AuthImport = components["schemas"]["ProviderAuthImport"];
type AuthImportCreate = components["schemas"]["ProviderAuthImportCreate"];
type AuthImportSchema = components["schemas"]["ProviderAuthImportSchema"];

const toApi = (row: Row<"provider_auth_imports">): AuthImport => ({
  object: "provider.auth_import",
  id: row.id,
  note: row.note,
  metadata: row.metadata,
  provider_id: row.provider_id,
  provider_deployment_id: row.provider_deployment_id,
  provider_auth_config_id: row.provider_auth_config_id,
  provider_auth_method_id: row.provider_auth_method_id,
  created_at: iso(row.created_at),
});

export class ProviderAuthImportService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
  ) {}

  async list({ authConfig }: AuthConfigScope, params: ListParams) {
    const query = this.db
      .selectFrom("provider_auth_imports")
      .selectAll()
      .where("provider_auth_config_id", "=", authConfig.id);
    const { rows, pagination } = await paginate(query, "provider_auth_imports.id", params);
    return { items: rows.map(toApi), pagination };
  }

  async get({ authConfig }: AuthConfigScope, id: string): Promise<AuthImport> {
    const row = await this.db
      .selectFrom("provider_auth_imports")
      .selectAll()
      .where("provider_auth_config_id", "=", authConfig.id)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound("provider.auth_import", id);
    return toApi(row);
  }

  async schema(scope: AuthConfigScope, methodId?: string): Promise<AuthImportSchema> {
    const method = await this.method(scope, methodId);
    return { object: "provider.auth_import_schema", provider_auth_method_id: method.id, schema: importSchema(method) };
  }

  /**
   * Validates the value against the method's import schema, then — in one transaction — makes it the auth
   * config's encrypted credential data (moving the config to that method) and records the import.
   */
  async create(scope: AuthConfigScope, body: AuthImportCreate): Promise<AuthImport> {
    const method = await this.method(scope, body.providerAuthMethodId);
    assertMatchesSchema(importSchema(method), body.value, {
      pathPrefix: ["value"],
      entity: "body",
      what: "value does not match the auth method's import schema",
    });
    const expiresAt = body.value.expires_at;
    if (typeof expiresAt === "string" && !storableInstant(expiresAt)) {
      const message = "is a date-time that cannot be stored (a leap second or a year before 0001)";
      throw new ApiError("invalid_data", `value.expires_at ${message}.`, {
        entity: "body",
        errors: [{ code: "format", message, path: ["value", "expires_at"] }],
      });
    }
    const data = credentialFromImport(method, body.value);
    const expired =
      data.kind === "oauth" && !data.refresh_token && !!data.expires_at && Date.parse(data.expires_at) <= Date.now();
    const { authConfig, deployment } = scope;
    const now = new Date();
    const id = newId("paci");
    const row = await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable("provider_auth_configs")
        .set({
          provider_auth_method_id: method.id,
          type: method.type === "token" ? "manual" : "oauth_manual",
          ...(method.type === "token" ? { provider_auth_credentials_id: null } : {}),
          status: expired ? "expired" : "active",
          status_reason: expired ? "The imported access token has expired and there is no refresh token." : null,
          credential_ciphertext: sealCredential(this.secrets, authConfig.id, data),
          expires_at: data.kind === "oauth" ? data.expires_at : null,
          updated_at: now,
        })
        .where("id", "=", authConfig.id)
        .execute();
      return trx
        .insertInto("provider_auth_imports")
        .values({
          id,
          instance_id: deployment.instanceId,
          provider_id: deployment.providerId,
          provider_deployment_id: deployment.id,
          provider_auth_config_id: authConfig.id,
          provider_auth_method_id: method.id,
          note: body.note,
          metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return toApi(row);
  }

  private async method({ deployment, authConfig }: AuthConfigScope, methodId = authConfig.provider_auth_method_id) {
    const method = await this.db
      .selectFrom("provider_auth_methods")
      .select(["id", "type", "input_schema"])
      .where("id", "=", methodId)
      .where("provider_id", "=", deployment.providerId)
      .executeTakeFirst();
    if (!method) throw ApiError.notFound("provider.auth_method", methodId);
    return method;
  }
}

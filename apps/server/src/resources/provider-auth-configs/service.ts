import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import type { ListParams } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import { childColumns, DeploymentChildren } from "../deployment-children.ts";
import type { DeploymentRef } from "../provider-deployments/service.ts";

type AuthConfig = components["schemas"]["ProviderAuthConfig"];
type AuthConfigCreate = components["schemas"]["ProviderAuthConfigCreate"];

export const AUTH_CONFIG_ENTITY = "provider.auth_config";

const toApi = (row: Row<"provider_auth_configs">): AuthConfig => ({
  object: "provider.auth_config",
  id: row.id,
  type: row.type,
  status: row.status,
  status_reason: row.status_reason,
  name: row.name,
  description: row.description,
  metadata: row.metadata,
  provider_id: row.provider_id,
  provider_deployment_id: row.provider_deployment_id,
  provider_auth_method_id: row.provider_auth_method_id,
  provider_auth_credentials_id: row.provider_auth_credentials_id,
  consumer_id: row.consumer_id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
});

export interface AuthConfigFilters extends ListParams {
  provider_auth_method_id?: string[];
  provider_auth_credentials_id?: string[];
}

export class ProviderAuthConfigService extends DeploymentChildren<"provider_auth_configs", AuthConfig> {
  constructor(db: Db) {
    super(db, "provider_auth_configs", AUTH_CONFIG_ENTITY, toApi, "provider_auth_config_id");
  }

  listFiltered(deployment: DeploymentRef, filters: AuthConfigFilters) {
    return this.list(deployment, filters, (q) => {
      let narrowed = q;
      if (filters.provider_auth_method_id)
        narrowed = narrowed.where("provider_auth_method_id", "in", filters.provider_auth_method_id);
      if (filters.provider_auth_credentials_id) {
        narrowed = narrowed.where("provider_auth_credentials_id", "in", filters.provider_auth_credentials_id);
      }
      return narrowed;
    });
  }

  /** An OAuth connection without tokens yet (`oauth_manual`, `pending`): an import supplies them. */
  async create(deployment: DeploymentRef, body: AuthConfigCreate): Promise<AuthConfig> {
    const method = await this.db
      .selectFrom("provider_auth_methods")
      .select(["id", "type"])
      .where("id", "=", body.provider_auth_method_id)
      .where("provider_id", "=", deployment.providerId)
      .executeTakeFirst();
    if (!method) throw ApiError.notFound("provider.auth_method", body.provider_auth_method_id);
    if (method.type !== "oauth") {
      const message = `Auth method ${method.id} is a ${method.type} method; auth configs created here are OAuth connections (token connections come from a setup session or an import).`;
      throw new ApiError("invalid_data", message, {
        entity: "body",
        errors: [{ code: "conflict", message: "is not an OAuth auth method", path: ["provider_auth_method_id"] }],
      });
    }
    const credentialsId = body.credentials.provider_auth_credentials_id;
    const credentials = await this.db
      .selectFrom("provider_auth_credentials")
      .select("id")
      .where("id", "=", credentialsId)
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id)
      .executeTakeFirst();
    if (!credentials) throw ApiError.notFound("provider.auth_credentials", credentialsId);
    const row = await this.db
      .insertInto("provider_auth_configs")
      .values({
        id: newId("pac"),
        ...childColumns(deployment, body),
        provider_auth_method_id: method.id,
        provider_auth_credentials_id: credentials.id,
        type: "oauth_manual",
        status: "pending",
        status_reason: null,
        credential_ciphertext: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toApi(row);
  }
}

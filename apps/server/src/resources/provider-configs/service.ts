import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { JsonObject, Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { assertMatchesSchema } from "../../lib/json-schema.ts";
import { iso } from "../../lib/time.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { childColumns, DeploymentChildren } from "../deployment-children.ts";
import type { DeploymentRef, ProviderDeploymentService } from "../provider-deployments/service.ts";

type ConfigCreate = components["schemas"]["ProviderConfigCreate"];
type ConfigSchema = components["schemas"]["ProviderConfigSchema"];
type Config = components["schemas"]["ProviderConfig"];

/** The fields configs and vaults show (their data is write-only, so never among them). */
export const describedChild =
  <O extends string>(object: O) =>
  (row: Row<"provider_configs" | "provider_config_vaults">) => ({
    object,
    id: row.id,
    name: row.name,
    description: row.description,
    metadata: row.metadata,
    provider_id: row.provider_id,
    provider_deployment_id: row.provider_deployment_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  });

/** Config and vault data: at most this many bytes of JSON. */
export const MAX_CONFIG_DATA_BYTES = 64 * 1024;

export function assertDataSize(data: JsonObject, path: string[]): void {
  const size = Buffer.byteLength(JSON.stringify(data));
  if (size > MAX_CONFIG_DATA_BYTES) {
    const message = `must be at most ${MAX_CONFIG_DATA_BYTES} bytes of JSON (got ${size})`;
    throw new ApiError("invalid_data", `${path.join(".")} ${message}.`, {
      entity: "body",
      errors: [{ code: "max_size", message, path }],
    });
  }
}

export const configAad = (id: string) => `provider_configs:${id}`;
export const vaultAad = (id: string) => `provider_config_vaults:${id}`;

export class ProviderConfigService extends DeploymentChildren<"provider_configs", Config> {
  constructor(
    db: Db,
    private readonly deployments: ProviderDeploymentService,
    private readonly secrets: SecretBox,
  ) {
    super(db, "provider_configs", "provider.config", describedChild("provider.config"), "provider_config_id");
  }

  async schema(deployment: DeploymentRef): Promise<ConfigSchema> {
    const version = await this.deployments.runnableVersion(deployment);
    return {
      object: "provider.config_schema",
      provider_id: deployment.providerId,
      provider_version_id: version.id,
      schema: version.config_schema,
    };
  }

  /** Validates the values against the deployment's config schema and stores them encrypted; nothing on failure. */
  async create(deployment: DeploymentRef, body: ConfigCreate): Promise<Config> {
    const version = await this.deployments.runnableVersion(deployment);
    let data: JsonObject;
    if (body.config.type === "inline") {
      data = body.config.data;
      assertDataSize(data, ["config", "data"]);
      assertMatchesSchema(version.config_schema, data, {
        pathPrefix: ["config", "data"],
        entity: "body",
        what: "config.data does not match the config schema",
      });
    } else {
      const vaultId = body.config.provider_config_vault_id;
      const vault = await this.db
        .selectFrom("provider_config_vaults")
        .select(["id", "provider_id", "data_ciphertext"])
        .where("instance_id", "=", deployment.instanceId)
        .where("id", "=", vaultId)
        .executeTakeFirst();
      if (!vault) throw ApiError.notFound("provider.config_vault", vaultId);
      if (vault.provider_id !== deployment.providerId) {
        const message = `Config vault ${vaultId} belongs to a deployment of another provider.`;
        throw new ApiError("invalid_data", message, {
          entity: "body",
          errors: [{ code: "conflict", message, path: ["config", "provider_config_vault_id"] }],
        });
      }
      data = this.secrets.decryptJson<JsonObject>(vault.data_ciphertext, vaultAad(vault.id));
      assertMatchesSchema(version.config_schema, data, {
        pathPrefix: [],
        entity: "provider.config_vault",
        what: `The data of config vault ${vaultId} does not match the config schema`,
      });
    }
    const id = newId("pcf");
    const row = await this.db
      .insertInto("provider_configs")
      .values({
        id,
        ...childColumns(deployment, body),
        provider_version_id: version.id,
        source: body.config.type,
        data_ciphertext: this.secrets.encryptJson(data, configAad(id)),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return this.toApi(row);
  }
}

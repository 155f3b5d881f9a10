import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { ListParams } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import { RESERVED_AUTHORIZE_PARAMS } from "../../oauth/flow-runner.ts";
import { effectiveStatus, type FlowEmbeds, type FlowRow, flowUrl, type OAuthFlowStore } from "../../oauth/flows.ts";
import type { DeploymentRef } from "../provider-deployments/service.ts";

type OAuthSetup = components["schemas"]["ProviderOAuthSetup"];
type OAuthSetupCreate = components["schemas"]["ProviderOAuthSetupCreate"];
type OAuthSetupUpdate = components["schemas"]["ProviderOAuthSetupUpdate"];

const KIND = "oauth_setup";
const WIRE_STATUS = {
  pending: "unused",
  opened: "opened",
  completed: "completed",
  failed: "failed",
  expired: "expired",
} as const;

export class ProviderOAuthSetupService {
  constructor(
    private readonly flows: OAuthFlowStore,
    private readonly publicUrl: string,
  ) {}

  private toApi(row: FlowRow, embeds: FlowEmbeds): OAuthSetup {
    const { status, reason } = effectiveStatus(row);
    const pick = <T>(map: Map<string, T>, id: string | null) => (id === null ? null : (map.get(id) ?? null));
    return {
      object: "provider.oauth_setup",
      id: row.id,
      status: WIRE_STATUS[status],
      failure_reason: reason,
      is_ephemeral: row.is_ephemeral,
      provider_id: row.provider_id,
      name: row.name,
      description: row.description,
      metadata: row.metadata,
      redirect_url: row.redirect_url,
      url: flowUrl(this.publicUrl, row, status),
      auth_config: pick(embeds.authConfigs, row.provider_auth_config_id),
      credentials: pick(embeds.credentials, row.provider_auth_credentials_id),
      auth_method: embeds.methods.get(row.provider_auth_method_id) ?? null,
      deployment: {
        object: "provider.deployment#preview",
        id: row.provider_deployment_id,
        name: embeds.deploymentNames.get(row.provider_deployment_id) ?? null,
        provider_id: row.provider_id,
      },
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      expires_at: iso(row.expires_at),
    };
  }

  private async one(row: FlowRow) {
    return this.toApi(row, await this.flows.embeds([row]));
  }

  async list(deployment: DeploymentRef, params: ListParams) {
    const { rows, pagination } = await this.flows.list(deployment, KIND, params);
    const embeds = await this.flows.embeds(rows);
    return { items: rows.map((r) => this.toApi(r, embeds)), pagination };
  }

  async get(deployment: DeploymentRef, id: string) {
    return this.one(await this.flows.find(deployment, KIND, id));
  }

  async update(deployment: DeploymentRef, id: string, body: OAuthSetupUpdate) {
    return this.one(await this.flows.update(deployment, KIND, id, body));
  }

  /** Checks the references (no upstream call) and stores the setup `unused`; the user starts it at `url`. */
  async create(deployment: DeploymentRef, body: OAuthSetupCreate) {
    const reserved = Object.keys(body.config.extra_authorize_params ?? {}).filter((p) =>
      RESERVED_AUTHORIZE_PARAMS.includes(p),
    );
    if (reserved.length) {
      throw new ApiError(
        "invalid_data",
        `config.extra_authorize_params cannot set ${reserved.join(", ")}: this server sets those parameters itself.`,
        {
          entity: "body",
          errors: reserved.map((p) => ({
            code: "reserved",
            message: "is set by this server",
            path: ["config", "extra_authorize_params", p],
          })),
        },
      );
    }
    const method = await this.flows.method(deployment, body.provider_auth_method_id, "provider_auth_method_id");
    if (method.type === "token") {
      throw new ApiError("invalid_data", `Auth method ${method.id} is a ${method.type} method, not an OAuth one.`, {
        entity: "body",
        errors: [{ code: "enum", message: "is not an oauth auth method", path: ["provider_auth_method_id"] }],
      });
    }
    // MCP OAuth registers its own client; auth credentials are only its last resort, and only when named.
    const credentialsId =
      method.type === "mcp_oauth" && body.provider_auth_credentials_id === undefined
        ? null
        : await this.flows.credentialsId(deployment, body.provider_auth_credentials_id, "provider_auth_credentials_id");
    const row = await this.flows.insert(deployment, {
      kind: KIND,
      method,
      credentialsId,
      name: body.name,
      description: body.description ?? null,
      metadata: body.metadata ?? null,
      redirectUrl: body.redirect_url ?? null,
      isEphemeral: body.is_ephemeral ?? false,
      config: body.config,
    });
    return this.one(row);
  }
}

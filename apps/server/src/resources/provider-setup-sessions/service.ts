import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { OAuthFlowStatus } from "../../db/schema.ts";
import type { ListParams } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import { effectiveStatus, type FlowEmbeds, type FlowRow, flowUrl, type OAuthFlowStore } from "../../oauth/flows.ts";
import type { DeploymentRef } from "../provider-deployments/service.ts";

type SetupSession = components["schemas"]["ProviderSetupSession"];
type SetupSessionCreate = components["schemas"]["ProviderSetupSessionCreate"];
type SetupSessionUpdate = components["schemas"]["ProviderSetupSessionUpdate"];
type WireStatus = SetupSession["status"];

const KIND = "setup_session";
const WIRE_STATUS: Record<OAuthFlowStatus, WireStatus> = {
  pending: "pending",
  opened: "in_progress",
  completed: "completed",
  failed: "failed",
  expired: "expired",
};

export interface SetupSessionFilters extends ListParams {
  provider_auth_method_id?: string[];
  status?: WireStatus;
}

export class ProviderSetupSessionService {
  constructor(
    private readonly flows: OAuthFlowStore,
    private readonly publicUrl: string,
  ) {}

  private toApi(row: FlowRow, embeds: FlowEmbeds): SetupSession {
    const { status, reason } = effectiveStatus(row);
    return {
      object: "provider.setup_session",
      id: row.id,
      type: "auth_only",
      status: WIRE_STATUS[status],
      failure_reason: reason,
      name: row.name,
      description: row.description,
      metadata: row.metadata,
      provider_id: row.provider_id,
      provider_deployment_id: row.provider_deployment_id,
      provider_auth_method_id: row.provider_auth_method_id,
      redirect_url: row.redirect_url,
      url: flowUrl(this.publicUrl, row, status),
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      expires_at: iso(row.expires_at),
      auth_config: row.provider_auth_config_id ? (embeds.authConfigs.get(row.provider_auth_config_id) ?? null) : null,
      consumer_id: row.consumer_id,
    };
  }

  private async one(row: FlowRow) {
    return this.toApi(row, await this.flows.embeds([row]));
  }

  /** Filters by the status readers see: an unfinished session past `expires_at` counts as `expired`. */
  async list(deployment: DeploymentRef, filters: SetupSessionFilters) {
    const now = new Date();
    const { rows, pagination } = await this.flows.list(deployment, KIND, filters, (q) => {
      let narrowed = q;
      if (filters.provider_auth_method_id) {
        narrowed = narrowed.where("provider_auth_method_id", "in", filters.provider_auth_method_id);
      }
      const wanted = filters.status;
      if (wanted === "expired") {
        narrowed = narrowed.where((eb) =>
          eb.or([
            eb("status", "=", "expired"),
            eb.and([eb("status", "in", ["pending", "opened"]), eb("expires_at", "<=", now)]),
          ]),
        );
      } else if (wanted) {
        const stored = wanted === "in_progress" ? "opened" : wanted;
        narrowed = narrowed.where("status", "=", stored);
        if (stored === "pending" || stored === "opened") narrowed = narrowed.where("expires_at", ">", now);
      }
      return narrowed;
    });
    const embeds = await this.flows.embeds(rows);
    return { items: rows.map((r) => this.toApi(r, embeds)), pagination };
  }

  async get(deployment: DeploymentRef, id: string) {
    return this.one(await this.flows.find(deployment, KIND, id));
  }

  async update(deployment: DeploymentRef, id: string, body: SetupSessionUpdate) {
    return this.one(await this.flows.update(deployment, KIND, id, body));
  }

  /** The deleted session as it was; its link and callback stop working (the row is gone). */
  async delete(deployment: DeploymentRef, id: string) {
    const row = await this.flows.delete(deployment, KIND, id);
    return this.toApi(row, await this.flows.embeds([row]));
  }

  /** A portal names the consumer it connects: the auth config the session creates is theirs alone. */
  async create(deployment: DeploymentRef, body: SetupSessionCreate, consumerId?: string) {
    const method = await this.flows.method(deployment, body.providerAuthMethodId, "providerAuthMethodId");
    if (method.type === "token" && body.providerAuthCredentialsId !== undefined) {
      throw new ApiError(
        "invalid_data",
        `providerAuthCredentialsId applies to OAuth auth methods only; ${method.id} is a token method.`,
        {
          entity: "body",
          errors: [
            { code: "not_allowed", message: "is only for oauth auth methods", path: ["providerAuthCredentialsId"] },
          ],
        },
      );
    }
    // MCP OAuth registers its own client; auth credentials are only its last resort, and only when named.
    const credentialsId =
      method.type === "oauth" || (method.type === "mcp_oauth" && body.providerAuthCredentialsId !== undefined)
        ? await this.flows.credentialsId(deployment, body.providerAuthCredentialsId, "providerAuthCredentialsId")
        : null;
    const row = await this.flows.insert(deployment, {
      kind: KIND,
      method,
      credentialsId,
      name: body.name ?? null,
      description: body.description ?? null,
      metadata: body.metadata ?? null,
      redirectUrl: body.redirectUrl ?? null,
      consumerId,
    });
    return this.one(row);
  }
}

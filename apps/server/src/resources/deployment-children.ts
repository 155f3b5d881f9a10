import { ApiError } from "@toolplane/server-stubs";
import type { Db } from "../db/database.ts";
import type { JsonObject } from "../db/schema.ts";
import { type ListParams, paginate } from "../lib/pagination.ts";
import { describedPatch } from "../lib/patch.ts";
import { iso } from "../lib/time.ts";
import type { DeploymentRef } from "./provider-deployments/service.ts";

type ChildTable = "provider_configs" | "provider_config_vaults";

/** The fields configs and vaults share on the wire (their data is write-only, so never among them). */
export interface ChildObject<O extends string> {
  object: O;
  id: string;
  name: string;
  description: string | null;
  metadata: JsonObject | null;
  provider_id: string;
  provider_deployment_id: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = [
  "id",
  "name",
  "description",
  "metadata",
  "provider_id",
  "provider_deployment_id",
  "created_at",
  "updated_at",
] as const;

/**
 * Reads, renames and deletes the rows that live under a deployment (configs, config vaults), scoped to the
 * deployment and so to its instance: another deployment's or instance's id is a 404.
 */
export class DeploymentChildren<O extends string> {
  constructor(
    private readonly db: Db,
    private readonly table: ChildTable,
    private readonly object: O,
  ) {}

  private select(deployment: DeploymentRef) {
    return this.db
      .selectFrom(this.table)
      .select(COLUMNS)
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id);
  }

  async list(deployment: DeploymentRef, params: ListParams) {
    const { rows, pagination } = await paginate(this.select(deployment), `${this.table}.id`, params);
    return { items: rows.map((r) => this.toApi(r)), pagination };
  }

  async get(deployment: DeploymentRef, id: string): Promise<ChildObject<O>> {
    const row = await this.select(deployment).where("id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound(this.object, id);
    return this.toApi(row);
  }

  async update(
    deployment: DeploymentRef,
    id: string,
    body: { name?: string; description?: string | null; metadata?: JsonObject | null },
  ): Promise<ChildObject<O>> {
    const row = await this.db
      .updateTable(this.table)
      .set(describedPatch(body))
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id)
      .where("id", "=", id)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(this.object, id);
    return this.toApi(row);
  }

  async delete(deployment: DeploymentRef, id: string): Promise<ChildObject<O>> {
    const row = await this.db
      .deleteFrom(this.table)
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id)
      .where("id", "=", id)
      .returning(COLUMNS)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(this.object, id);
    return this.toApi(row);
  }

  toApi(row: {
    id: string;
    name: string;
    description: string | null;
    metadata: JsonObject | null;
    provider_id: string;
    provider_deployment_id: string;
    created_at: Date;
    updated_at: Date;
  }): ChildObject<O> {
    return {
      object: this.object,
      id: row.id,
      name: row.name,
      description: row.description,
      metadata: row.metadata,
      provider_id: row.provider_id,
      provider_deployment_id: row.provider_deployment_id,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    };
  }
}

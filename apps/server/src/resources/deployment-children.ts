import { ApiError } from "@toolplane/server-stubs";
import type { Db } from "../db/database.ts";
import type { JsonObject, Row } from "../db/schema.ts";
import { type ListParams, paginate } from "../lib/pagination.ts";
import { describedPatch } from "../lib/patch.ts";
import type { DeploymentRef } from "./provider-deployments/service.ts";
import { assertNotUsedBySessions } from "./sessions/usage.ts";

/** The tables whose rows live under a deployment and are reachable only through it. */
export type ChildTable =
  | "provider_configs"
  | "provider_config_vaults"
  | "provider_auth_credentials"
  | "provider_auth_configs";

export interface DescribedPatch {
  /** null only where the resource's spec allows clearing the name. */
  name?: string | null;
  description?: string | null;
  metadata?: JsonObject | null;
}

/** The columns every deployment child is created with. */
export function childColumns(deployment: DeploymentRef, body: DescribedPatch & { name: string }) {
  const now = new Date();
  return {
    instance_id: deployment.instanceId,
    provider_id: deployment.providerId,
    provider_deployment_id: deployment.id,
    name: body.name,
    description: body.description ?? null,
    metadata: body.metadata == null ? null : JSON.stringify(body.metadata),
    created_at: now,
    updated_at: now,
  };
}

/**
 * Reads, renames and deletes the rows that live under a deployment, scoped to the deployment and so to its
 * instance: another deployment's or instance's id is a 404. Each resource supplies how a row looks on the wire.
 */
export class DeploymentChildren<T extends ChildTable, A> {
  constructor(
    protected readonly db: Db,
    private readonly table: T,
    private readonly entity: string,
    readonly toApi: (row: Row<T>) => A,
    /** The session provider column that references rows of this table: in use by a session, a row is kept (409). */
    private readonly sessionReference?: "provider_config_id" | "provider_auth_config_id",
  ) {}

  /** Kysely cannot type a query over a table chosen at run time; every row here is a Row<T>. */
  protected scoped(deployment: DeploymentRef) {
    return this.db
      .selectFrom(this.table as ChildTable)
      .selectAll()
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id);
  }

  async list(deployment: DeploymentRef, params: ListParams, narrow = (q: ReturnType<typeof this.scoped>) => q) {
    const { rows, pagination } = await paginate(narrow(this.scoped(deployment)), `${this.table}.id`, params);
    return { items: rows.map((r) => this.toApi(r as Row<T>)), pagination };
  }

  async find(deployment: DeploymentRef, id: string): Promise<Row<T>> {
    const row = await this.scoped(deployment).where("id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound(this.entity, id);
    return row as Row<T>;
  }

  async get(deployment: DeploymentRef, id: string): Promise<A> {
    return this.toApi(await this.find(deployment, id));
  }

  async update(deployment: DeploymentRef, id: string, body: DescribedPatch): Promise<A> {
    const row = await this.db
      .updateTable(this.table as ChildTable)
      .set(describedPatch(body))
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(this.entity, id);
    return this.toApi(row as Row<T>);
  }

  async delete(deployment: DeploymentRef, id: string): Promise<A> {
    const row = await this.db.transaction().execute(async (trx) => {
      const locked = await trx
        .selectFrom(this.table as ChildTable)
        .select("id")
        .where("instance_id", "=", deployment.instanceId)
        .where("provider_deployment_id", "=", deployment.id)
        .where("id", "=", id)
        .forUpdate()
        .executeTakeFirst();
      if (!locked) throw ApiError.notFound(this.entity, id);
      if (this.sessionReference) {
        const what = this.sessionReference === "provider_config_id" ? "config" : "auth config";
        await assertNotUsedBySessions(trx, this.sessionReference, id, what, this.entity);
      }
      return trx
        .deleteFrom(this.table as ChildTable)
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return this.toApi(row as Row<T>);
  }
}

import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { type Expression, type ExpressionBuilder, sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { Database, JsonObject } from "../../db/schema.ts";
import { containsPattern } from "../../lib/filters.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { prepared } from "../../lib/prepared.ts";
import { iso } from "../../lib/time.ts";
import { runnerProblem } from "../../runtimes/runner.ts";
import { assertNotUsedBySessions } from "../sessions/usage.ts";

type Deployment = components["schemas"]["ProviderDeployment"];
type DeploymentCreate = components["schemas"]["ProviderDeploymentCreate"];
type DeploymentUpdate = components["schemas"]["ProviderDeploymentUpdate"];

export const DEPLOYMENT_ENTITY = "provider.deployment";
const RUNNABLE = ["released", "deprecated"];

export interface DeploymentFilters extends ListParams {
  search?: string;
  provider_id?: string[];
  provider_version_id?: string[];
  status?: "active" | "inactive";
}

/** What configs, vaults and sessions need to know about a deployment. */
export interface DeploymentRef {
  id: string;
  instanceId: string;
  providerId: string;
  /** The locked version, or the provider's current one; null when there is none. */
  effectiveVersionId: string | null;
}

export interface EffectiveVersion {
  id: string;
  status: string;
  config_schema: JsonObject;
}

const visibleProvider = (instanceId: string) => (eb: ExpressionBuilder<Database, "providers">) =>
  eb.or([eb("providers.instance_id", "is", null), eb("providers.instance_id", "=", instanceId)]);

type ProviderExpressions = ExpressionBuilder<Database, "providers">;

/** An optional id given to the create query: null, or naming a row that `row` finds for the provider. */
const absentOrFound =
  (id: string, row: (eb: ProviderExpressions) => Expression<unknown>) => (eb: ProviderExpressions) =>
    eb.or([sql<boolean>`${id}::text is null`, eb.exists(row(eb))]);

export class ProviderDeploymentService {
  private readonly getQuery;
  private readonly createQuery;

  constructor(private readonly db: Db) {
    this.getQuery = prepared(["instanceId", "id"], (p) =>
      this.selectDeployments(p.instanceId).where("d.id", "=", p.id),
    );
    const createFields = [
      "id",
      "instanceId",
      "providerId",
      "versionId",
      "configId",
      "name",
      "description",
      "metadata",
      "now",
      "runnerChecked",
    ] as const;
    this.createQuery = prepared(createFields, (p) => {
      const insert = db
        .insertInto("provider_deployments")
        .columns([
          "id",
          "instance_id",
          "provider_id",
          "locked_version_id",
          "default_config_id",
          "name",
          "description",
          "metadata",
          "created_at",
          "updated_at",
        ])
        .expression((eb) =>
          eb
            .selectFrom("providers")
            .select([
              sql<string>`${p.id}::text`.as("id"),
              sql<string>`${p.instanceId}::text`.as("instance_id"),
              "providers.id as provider_id",
              sql<string | null>`${p.versionId}::text`.as("locked_version_id"),
              sql<string | null>`${p.configId}::text`.as("default_config_id"),
              sql<string>`${p.name}::text`.as("name"),
              sql<string | null>`${p.description}::text`.as("description"),
              sql<string | null>`${p.metadata}::jsonb`.as("metadata"),
              sql<Date>`${p.now}::timestamptz`.as("created_at"),
              sql<Date>`${p.now}::timestamptz`.as("updated_at"),
            ])
            .where("providers.id", "=", p.providerId)
            .where(visibleProvider(p.instanceId))
            .where(
              absentOrFound(p.versionId, ({ selectFrom }) =>
                selectFrom("provider_versions as lv")
                  .select("lv.id")
                  .where("lv.id", "=", p.versionId)
                  .whereRef("lv.provider_id", "=", "providers.id"),
              ),
            )
            .where(
              absentOrFound(p.configId, ({ selectFrom }) =>
                selectFrom("provider_configs as c")
                  .select("c.id")
                  .where("c.id", "=", p.configId)
                  .where("c.instance_id", "=", p.instanceId)
                  .whereRef("c.provider_id", "=", "providers.id"),
              ),
            )
            // A version that runs a package (runnerProblem's case: a stdio runtime with a package) needs its runner
            // on this server: such a create goes through assertRunsHere first, and only then inserts (runnerChecked).
            .where((eb) =>
              eb.or([
                sql<boolean>`${p.runnerChecked}::boolean`,
                eb.not(
                  eb.exists(
                    eb
                      .selectFrom("provider_versions as rv")
                      .select("rv.id")
                      .where(sql<boolean>`rv.id = coalesce(${p.versionId}::text, providers.current_version_id)`)
                      .where(
                        sql<boolean>`rv.runtime->>'type' = 'stdio' and jsonb_typeof(rv.runtime->'package') = 'object'`,
                      ),
                  ),
                ),
              ]),
            ),
        )
        .returningAll();
      // The CTE's rows have the table's columns, so the joins of `get` apply to them unchanged.
      const inserted = db.with("inserted", () => insert).selectFrom("inserted as d");
      return this.selectDeployments(p.instanceId, inserted as unknown as ReturnType<typeof this.fromDeployments>);
    });
  }

  async list(instanceId: string, filters: DeploymentFilters) {
    let query = this.selectDeployments(instanceId);
    if (filters.search) query = query.where("d.name", "ilike", containsPattern(filters.search));
    if (filters.provider_id) query = query.where("d.provider_id", "in", filters.provider_id);
    if (filters.provider_version_id) {
      query = query.where(
        sql<string>`coalesce(d.locked_version_id, p.current_version_id)`,
        "in",
        filters.provider_version_id,
      );
    }
    if (filters.status) {
      const active = sql<boolean>`(v.id is not null and v.status in (${sql.join(RUNNABLE)}))`;
      query = query.where(filters.status === "active" ? active : sql<boolean>`not ${active}`);
    }
    const { rows, pagination } = await paginate(query, "d.id", filters);
    return { items: rows.map(toApi), pagination };
  }

  async get(instanceId: string, id: string): Promise<Deployment> {
    const row = (await this.db.executeQuery(this.getQuery({ instanceId, id }))).rows[0];
    if (!row) throw ApiError.notFound(DEPLOYMENT_ENTITY, id);
    return toApi(row);
  }

  /**
   * One statement: the insert selects from the provider and checks the locked version and the default config in
   * its WHERE, and the CTE's row is read back with the joins of `get`. A version that runs a package (an MCP
   * Registry import) is inserted only once its runner is known to be here (a 409 otherwise). Only when nothing was
   * inserted do the lookups run one by one, to say which reference is wrong.
   */
  async create(instanceId: string, body: DeploymentCreate, retried = false): Promise<Deployment> {
    const row = await this.insert(instanceId, body, false);
    if (row) return toApi(row);
    await this.assertRunsHere(instanceId, body);
    const checked = await this.insert(instanceId, body, true);
    if (checked) return toApi(checked);
    await this.explainRejectedCreate(instanceId, body);
    // The references were fine a moment later: one of them changed concurrently, so try once more.
    if (retried) throw new ApiError("conflict", "The provider, version or config changed meanwhile; retry.");
    return this.create(instanceId, body, true);
  }

  private async insert(instanceId: string, body: DeploymentCreate, runnerChecked: boolean) {
    const query = this.createQuery({
      id: newId("pde"),
      instanceId,
      providerId: body.provider_id,
      versionId: body.locked_provider_version_id ?? null,
      configId: body.config?.provider_config_id ?? null,
      name: body.name,
      description: body.description ?? null,
      metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
      now: new Date(),
      runnerChecked,
    });
    return (await this.db.executeQuery(query)).rows[0];
  }

  /**
   * A 409 when the version the deployment would run needs what this server lacks (runtimes/runner.ts), as a
   * container custom provider's version fails without an engine. Unknown references are left to the create.
   */
  private async assertRunsHere(instanceId: string, body: DeploymentCreate): Promise<void> {
    const version = await this.db
      .selectFrom("providers")
      .innerJoin("provider_versions as v", "v.provider_id", "providers.id")
      .select(["providers.slug", "v.version", "v.runtime"])
      .where("providers.id", "=", body.provider_id)
      .where(visibleProvider(instanceId))
      .where(
        sql<boolean>`v.id = coalesce(${body.locked_provider_version_id ?? null}::text, providers.current_version_id)`,
      )
      .executeTakeFirst();
    const problem = version && runnerProblem(version.runtime);
    if (version && problem) {
      throw new ApiError(
        "conflict",
        `Provider ${version.slug} version ${version.version} cannot run on this server. ${problem}`,
        { entity: "provider.version" },
      );
    }
  }

  /** Throws the 404 or 400 that a rejected create deserves. */
  private async explainRejectedCreate(instanceId: string, body: DeploymentCreate): Promise<void> {
    const provider = await this.db
      .selectFrom("providers")
      .select("id")
      .where("id", "=", body.provider_id)
      .where(visibleProvider(instanceId))
      .executeTakeFirst();
    if (!provider) throw ApiError.notFound("provider", body.provider_id);
    if (body.locked_provider_version_id) {
      const version = await this.db
        .selectFrom("provider_versions")
        .innerJoin("providers", "providers.id", "provider_versions.provider_id")
        .select(["provider_versions.provider_id"])
        .where("provider_versions.id", "=", body.locked_provider_version_id)
        .where(visibleProvider(instanceId))
        .executeTakeFirst();
      if (!version) throw ApiError.notFound("provider.version", body.locked_provider_version_id);
      if (version.provider_id !== provider.id) {
        throw invalid(
          ["locked_provider_version_id"],
          `Provider version ${body.locked_provider_version_id} belongs to another provider, not ${provider.id}.`,
        );
      }
    }
    const configId = body.config?.provider_config_id;
    if (configId) {
      const config = await this.db
        .selectFrom("provider_configs")
        .select("provider_id")
        .where("id", "=", configId)
        .where("instance_id", "=", instanceId)
        .executeTakeFirst();
      if (!config) throw ApiError.notFound("provider.config", configId);
      if (config.provider_id !== provider.id) {
        throw invalid(
          ["config", "provider_config_id"],
          `Config ${configId} is for another provider, not ${provider.id}.`,
        );
      }
    }
  }

  async update(instanceId: string, id: string, body: DeploymentUpdate): Promise<Deployment> {
    const updated = await this.db
      .updateTable("provider_deployments")
      .set(describedPatch(body))
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) throw ApiError.notFound(DEPLOYMENT_ENTITY, id);
    return this.get(instanceId, id);
  }

  /**
   * Deletes the deployment and, through ON DELETE CASCADE, everything under it (configs, vaults and — as they
   * land — auth credentials, auth configs, setups, token imports), in one transaction. Refused while another
   * deployment uses one of its configs as its default config, while a provider of an active session reaches
   * it, or while a session template names it. The row is locked first: adding it to a session or template
   * locks it FOR SHARE, so neither can slip in between the check and the delete.
   */
  async delete(instanceId: string, id: string): Promise<Deployment> {
    const deployment = await this.get(instanceId, id);
    await this.db.transaction().execute(async (trx) => {
      await trx.selectFrom("provider_deployments").select("id").where("id", "=", id).forUpdate().execute();
      await assertNotUsedBySessions(trx, "provider_deployment_id", id, "deployment", DEPLOYMENT_ENTITY);
      const dependent = await trx
        .selectFrom("provider_deployments as other")
        .innerJoin("provider_configs as c", "c.id", "other.default_config_id")
        .select(["other.id as deployment_id", "c.id as config_id"])
        .where("c.provider_deployment_id", "=", id)
        .where("other.id", "!=", id)
        .limit(1)
        .executeTakeFirst();
      if (dependent) {
        throw new ApiError(
          "conflict",
          `Provider deployment ${dependent.deployment_id} uses config ${dependent.config_id} of this deployment as its default config; delete that config or deployment first.`,
          { entity: DEPLOYMENT_ENTITY },
        );
      }
      await trx.deleteFrom("provider_deployments").where("id", "=", id).where("instance_id", "=", instanceId).execute();
    });
    return deployment;
  }

  /** The deployment as other resources see it; 404 when it is not this instance's. */
  async ref(instanceId: string, id: string): Promise<DeploymentRef> {
    const row = await this.db
      .selectFrom("provider_deployments as d")
      .innerJoin("providers as p", "p.id", "d.provider_id")
      .select([
        "d.id",
        "d.provider_id",
        sql<string | null>`coalesce(d.locked_version_id, p.current_version_id)`.as("version_id"),
      ])
      .where("d.instance_id", "=", instanceId)
      .where("d.id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(DEPLOYMENT_ENTITY, id);
    return { id: row.id, instanceId, providerId: row.provider_id, effectiveVersionId: row.version_id };
  }

  /** The version a deployment runs; a 409 when it has none that can run. */
  async runnableVersion(deployment: DeploymentRef): Promise<EffectiveVersion> {
    const version = deployment.effectiveVersionId
      ? await this.db
          .selectFrom("provider_versions")
          .select(["id", "status", "config_schema"])
          .where("id", "=", deployment.effectiveVersionId)
          .executeTakeFirst()
      : undefined;
    if (!version || !RUNNABLE.includes(version.status)) {
      throw new ApiError(
        "conflict",
        `Provider deployment ${deployment.id} has no runnable version (its provider has no current version, or the version is ${version?.status ?? "missing"}).`,
        { entity: DEPLOYMENT_ENTITY },
      );
    }
    return version;
  }

  private fromDeployments() {
    return this.db.selectFrom("provider_deployments as d");
  }

  private selectDeployments(instanceId: string, from = this.fromDeployments()) {
    return from
      .innerJoin("providers as p", "p.id", "d.provider_id")
      .leftJoin("provider_versions as lv", "lv.id", "d.locked_version_id")
      .leftJoin("provider_versions as v", (join) =>
        join.on(sql<boolean>`v.id = coalesce(d.locked_version_id, p.current_version_id)`),
      )
      .leftJoin("provider_configs as c", "c.id", "d.default_config_id")
      .select([
        "d.id",
        "d.name",
        "d.description",
        "d.metadata",
        "d.provider_id",
        "d.created_at",
        "d.updated_at",
        "p.name as p_name",
        "p.description as p_description",
        "p.slug as p_slug",
        "p.created_at as p_created_at",
        "p.updated_at as p_updated_at",
        "lv.id as lv_id",
        "lv.version as lv_version",
        "lv.status as lv_status",
        "lv.created_at as lv_created_at",
        "lv.updated_at as lv_updated_at",
        "v.status as v_status",
        "c.id as c_id",
        "c.name as c_name",
        "c.description as c_description",
        "c.metadata as c_metadata",
        "c.provider_id as c_provider_id",
        "c.created_at as c_created_at",
        "c.updated_at as c_updated_at",
      ])
      .where("d.instance_id", "=", instanceId);
  }
}

type DeploymentRow = Awaited<
  ReturnType<ReturnType<ProviderDeploymentService["selectDeployments"]>["executeTakeFirstOrThrow"]>
>;

function toApi(r: DeploymentRow): Deployment {
  return {
    object: "provider.deployment",
    id: r.id,
    status: r.v_status && RUNNABLE.includes(r.v_status) ? "active" : "inactive",
    name: r.name,
    description: r.description,
    metadata: r.metadata,
    provider_id: r.provider_id,
    provider: {
      object: "provider",
      id: r.provider_id,
      name: r.p_name,
      description: r.p_description,
      slug: r.p_slug,
      created_at: iso(r.p_created_at),
      updated_at: iso(r.p_updated_at),
    },
    locked_version:
      r.lv_id && r.lv_version && r.lv_status && r.lv_created_at && r.lv_updated_at
        ? {
            object: "provider.version",
            id: r.lv_id,
            version: r.lv_version,
            status: r.lv_status as "released",
            created_at: iso(r.lv_created_at),
            updated_at: iso(r.lv_updated_at),
          }
        : null,
    default_config:
      r.c_id && r.c_name !== null && r.c_provider_id && r.c_created_at && r.c_updated_at
        ? {
            object: "provider.config",
            id: r.c_id,
            name: r.c_name,
            description: r.c_description,
            metadata: r.c_metadata,
            provider_id: r.c_provider_id,
            created_at: iso(r.c_created_at),
            updated_at: iso(r.c_updated_at),
          }
        : null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

function invalid(path: string[], message: string): ApiError {
  return new ApiError("invalid_data", message, { entity: "body", errors: [{ code: "conflict", message, path }] });
}

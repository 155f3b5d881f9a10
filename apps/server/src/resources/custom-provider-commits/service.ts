import { ApiError } from "@toolplane/server-stubs";
import type { components, operations } from "@toolplane/types";
import { recordCommit } from "../../custom-providers/environments.ts";
import { type CustomProviderRef, CustomProviderViews, identifier } from "../../custom-providers/views.ts";
import type { Db } from "../../db/database.ts";
import { paginate } from "../../lib/pagination.ts";
import { archivedConflict } from "../custom-provider-versions/service.ts";
import type { CustomProviderService } from "../custom-providers/service.ts";

type Commit = components["schemas"]["CustomProviderCommit"];
type Create = components["schemas"]["CustomProviderCommitCreate"];
type ListQuery = NonNullable<operations["listCustomProviderCommits"]["parameters"]["query"]>;

export const COMMIT_ENTITY = "custom_provider.commit";
const ENVIRONMENT_ENTITY = "custom_provider.environment";

const conflict = (message: string) => new ApiError("conflict", message, { entity: COMMIT_ENTITY });

export class CustomProviderCommitService {
  constructor(
    private readonly db: Db,
    private readonly customProviders: CustomProviderService,
  ) {}

  async list(ref: CustomProviderRef, filters: ListQuery) {
    let query = this.db.selectFrom("custom_provider_commits").selectAll().where("custom_provider_id", "=", ref.id);
    if (filters.ids?.length) query = query.where("id", "in", filters.ids);
    if (filters.custom_provider_version_ids?.length) {
      query = query.where("target_version_id", "in", filters.custom_provider_version_ids);
    }
    if (filters.custom_provider_environment_ids?.length) {
      query = query.where("to_environment_id", "in", filters.custom_provider_environment_ids);
    }
    const { rows, pagination } = await paginate(query, "id", filters);
    return { items: await (await CustomProviderViews.of(this.db, ref)).commits(rows), pagination };
  }

  async get(ref: CustomProviderRef, id: string): Promise<Commit> {
    const row = await this.db
      .selectFrom("custom_provider_commits")
      .selectAll()
      .where("id", "=", id)
      .where("custom_provider_id", "=", ref.id)
      .executeTakeFirst();
    const [commit] = row ? await (await CustomProviderViews.of(this.db, ref)).commits([row]) : [];
    if (!commit) throw ApiError.notFound(COMMIT_ENTITY, id);
    return commit;
  }

  /**
   * A merge takes the version the source environment holds; a rollback the one the target held before. Applied
   * at once when that version is deployed, pending while it still deploys; a failed version is refused.
   */
  async create(instanceId: string, customProviderId: string, body: Create): Promise<Commit> {
    const { action } = body;
    if (action.from_environment_id !== undefined && action.from_environment_id === action.to_environment_id) {
      throw new ApiError("invalid_data", "action.from_environment_id and action.to_environment_id must differ.", {
        entity: "body",
        errors: [
          { code: "distinct", message: "must differ from to_environment_id", path: ["action", "from_environment_id"] },
        ],
      });
    }
    const { ref, id } = await this.db.transaction().execute(async (trx) => {
      const ref = await this.customProviders.ref(trx, instanceId, customProviderId, true);
      const environment = async (envId: string) => {
        const env = await trx
          .selectFrom("custom_provider_environments")
          .selectAll()
          .where("id", "=", envId)
          .where("custom_provider_id", "=", ref.id)
          .executeTakeFirst();
        if (!env) throw ApiError.notFound(ENVIRONMENT_ENTITY, envId);
        return env;
      };
      const to = await environment(action.to_environment_id);
      const from = action.from_environment_id === undefined ? null : await environment(action.from_environment_id);
      if (ref.status === "archived") throw archivedConflict(ref, "commits");

      const targetId = action.type === "rollback" ? to.history.at(-1) : from?.current_version_id;
      if (!targetId) {
        throw conflict(
          action.type === "rollback"
            ? `Environment ${to.name} has no earlier version to roll back to.`
            : `Environment ${from?.name} holds no version to merge.`,
        );
      }
      const target = await trx
        .selectFrom("custom_provider_versions")
        .select(["index", "status"])
        .where("id", "=", targetId)
        .executeTakeFirstOrThrow();
      const label = identifier(target.index);
      if (target.status === "deployment_failed") {
        throw conflict(`Version ${label} failed to deploy and cannot be put into ${to.name}; deploy a new version.`);
      }
      // A rollback applies at once: pending ones would leave successive rollbacks aiming at the same version.
      if (action.type === "rollback" && target.status !== "deployment_succeeded") {
        throw conflict(`Version ${label} is still deploying; roll ${to.name} back once its deployment ends.`);
      }
      if (action.type === "merge_version_into_environment" && to.current_version_id === targetId) {
        throw conflict(`Environment ${to.name} already holds version ${label}.`);
      }
      const commitId = await recordCommit(
        trx,
        ref,
        {
          type: action.type,
          trigger: "manual",
          message: body.message,
          fromEnvironmentId: from?.id ?? null,
          toEnvironmentId: to.id,
          targetVersionId: targetId,
        },
        target.status === "deployment_succeeded",
      );
      return { ref, id: commitId };
    });
    return this.get(ref, id);
  }
}

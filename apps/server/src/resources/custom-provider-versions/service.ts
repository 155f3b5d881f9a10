import { ApiError } from "@toolplane/server-stubs";
import type { components, operations } from "@toolplane/types";
import { createVersion } from "../../custom-providers/environments.ts";
import { notifyDeployJobs } from "../../custom-providers/job-runner.ts";
import { prepareVersion } from "../../custom-providers/source.ts";
import { type CustomProviderRef, CustomProviderViews } from "../../custom-providers/views.ts";
import type { Db } from "../../db/database.ts";
import { paginate } from "../../lib/pagination.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import type { CustomProviderService } from "../custom-providers/service.ts";

type Version = components["schemas"]["CustomProviderVersion"];
type Create = components["schemas"]["CustomProviderVersionCreate"];
type ListQuery = NonNullable<operations["listCustomProviderVersions"]["parameters"]["query"]>;

export const VERSION_ENTITY = "custom_provider.version";

export const archivedConflict = (ref: CustomProviderRef, what: string) =>
  new ApiError(
    "conflict",
    `Custom provider ${ref.id} is archived and takes no new ${what}; set its status to active first.`,
    {
      entity: "custom_provider",
    },
  );

export class CustomProviderVersionService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly customProviders: CustomProviderService,
  ) {}

  async list(ref: CustomProviderRef, filters: ListQuery) {
    let query = this.db.selectFrom("custom_provider_versions").selectAll().where("custom_provider_id", "=", ref.id);
    if (filters.status?.length) query = query.where("status", "in", filters.status);
    if (filters.ids?.length) query = query.where("id", "in", filters.ids);
    const { rows, pagination } = await paginate(query, "id", filters);
    return { items: await (await CustomProviderViews.of(this.db, ref)).versions(rows), pagination };
  }

  async get(ref: CustomProviderRef, id: string): Promise<Version> {
    const row = await this.db
      .selectFrom("custom_provider_versions")
      .selectAll()
      .where("id", "=", id)
      .where("custom_provider_id", "=", ref.id)
      .executeTakeFirst();
    const [version] = row ? await (await CustomProviderViews.of(this.db, ref)).versions([row]) : [];
    if (!version) throw ApiError.notFound(VERSION_ENTITY, id);
    return version;
  }

  /** The next version, queued for deployment and merged into development at once; production is unchanged. */
  async create(instanceId: string, customProviderId: string, body: Create): Promise<Version> {
    const prepared = prepareVersion(body.from, body.config);
    const { ref, id } = await this.db.transaction().execute(async (trx) => {
      // The lock serialises version numbering and commits of this custom provider.
      const ref = await this.customProviders.ref(trx, instanceId, customProviderId, true);
      if (ref.status === "archived") throw archivedConflict(ref, "versions");
      if (body.from.type !== ref.type) {
        throw new ApiError(
          "invalid_data",
          `from.type must be "${ref.type}", the type of custom provider ${ref.id} (got "${body.from.type}").`,
          { entity: "body", errors: [{ code: "const", message: `must be "${ref.type}"`, path: ["from", "type"] }] },
        );
      }
      const version = await createVersion(trx, ref, prepared, "version_created", this.secrets);
      return { ref, id: version.id };
    });
    notifyDeployJobs();
    return this.get(ref, id);
  }
}

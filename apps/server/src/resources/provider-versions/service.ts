import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { visibleTo } from "../../lib/filters.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { type ProviderService, toProviderVersion } from "../providers/service.ts";

type ProviderVersionDetail = components["schemas"]["ProviderVersionDetail"];

const ENTITY = "provider.version";

const toApi = (v: Row<"provider_versions">): ProviderVersionDetail => ({
  ...toProviderVersion(v),
  provider_id: v.provider_id,
  config_schema: v.config_schema,
  tools: v.tools.map((t) => ({ name: t.name, description: t.description ?? null })),
});

export class ProviderVersionService {
  constructor(
    private readonly db: Db,
    private readonly providers: ProviderService,
  ) {}

  async list(instanceId: string, providerId: string, params: ListParams) {
    await this.providers.assertVisible(instanceId, providerId);
    const query = this.db.selectFrom("provider_versions").selectAll().where("provider_id", "=", providerId);
    const { rows, pagination } = await paginate(query, "id", params);
    return { items: rows.map(toApi), pagination };
  }

  /** A version of another provider, or of a provider the instance does not see, reads like one that does not exist. */
  async get(instanceId: string, providerId: string, id: string): Promise<ProviderVersionDetail> {
    const row = await this.db
      .selectFrom("provider_versions as v")
      .innerJoin("providers as p", "p.id", "v.provider_id")
      .selectAll("v")
      .where("v.id", "=", id)
      .where("v.provider_id", "=", providerId)
      .where(visibleTo(instanceId, "p.instance_id"))
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return toApi(row);
  }
}

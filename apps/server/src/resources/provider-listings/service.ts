import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import { visibleTo } from "../../lib/filters.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";

type ProviderListing = components["schemas"]["ProviderListing"];

export const LISTING_ENTITY = "provider.listing";

/** A listing row joined with its provider (the listing shows the provider's name, description and slug). */
export interface ListingRow {
  id: string;
  provider_id: string;
  name: string;
  description: string | null;
  slug: string;
}

export const toListing = (r: ListingRow): ProviderListing => ({
  object: "provider.listing",
  id: r.id,
  provider_id: r.provider_id,
  name: r.name,
  description: r.description,
  slug: r.slug,
});

export class ProviderListingService {
  constructor(private readonly db: Db) {}

  private visible(instanceId: string) {
    return this.db
      .selectFrom("provider_listings as l")
      .innerJoin("providers as p", "p.id", "l.provider_id")
      .select(["l.id", "l.provider_id", "p.name", "p.description", "p.slug"])
      .where(visibleTo(instanceId, "l.instance_id"));
  }

  async list(instanceId: string, params: ListParams) {
    const { rows, pagination } = await paginate(this.visible(instanceId), "l.id", params);
    return { items: rows.map(toListing), pagination };
  }

  async get(instanceId: string, id: string): Promise<ProviderListing> {
    const row = await this.visible(instanceId).where("l.id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound(LISTING_ENTITY, id);
    return toListing(row);
  }
}

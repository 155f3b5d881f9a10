import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { isUniqueViolation } from "../../lib/db-errors.ts";
import { visibleTo } from "../../lib/filters.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { insertWithUniqueSlug } from "../../lib/slugged-insert.ts";
import { iso } from "../../lib/time.ts";
import { LISTING_ENTITY, toListing } from "../provider-listings/service.ts";

type ProviderGroup = components["schemas"]["ProviderGroup"];
type ProviderListing = components["schemas"]["ProviderListing"];
type GroupCreate = components["schemas"]["ProviderGroupCreate"];
type GroupUpdate = components["schemas"]["ProviderGroupUpdate"];

const ENTITY = "provider.group";

export class ProviderGroupService {
  constructor(private readonly db: Db) {}

  async list(instanceId: string, params: ListParams) {
    const query = this.db.selectFrom("provider_groups").selectAll().where("instance_id", "=", instanceId);
    const { rows, pagination } = await paginate(query, "provider_groups.id", params);
    const listings = await this.listingsOf(rows.map((r) => r.id));
    return { items: rows.map((r) => toApi(r, listings.get(r.id) ?? [])), pagination };
  }

  async get(instanceId: string, id: string): Promise<ProviderGroup> {
    const row = await this.find(instanceId, id);
    return toApi(row, (await this.listingsOf([id])).get(id) ?? []);
  }

  async create(instanceId: string, body: GroupCreate): Promise<ProviderGroup> {
    const now = new Date();
    const row = await insertWithUniqueSlug(this.db, "provider_groups", instanceId, body.name, (slug) =>
      this.db
        .insertInto("provider_groups")
        .values({
          id: newId("pgr"),
          instance_id: instanceId,
          name: body.name,
          description: body.description ?? null,
          slug,
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) => oc.doNothing())
        .returningAll()
        .executeTakeFirst(),
    );
    return toApi(row, []);
  }

  async update(instanceId: string, id: string, body: GroupUpdate): Promise<ProviderGroup> {
    const row = await this.db
      .updateTable("provider_groups")
      .set(describedPatch(body))
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return toApi(row, (await this.listingsOf([id])).get(id) ?? []);
  }

  async addListing(instanceId: string, id: string, listingId: string): Promise<ProviderGroup> {
    await this.find(instanceId, id);
    const listing = await this.db
      .selectFrom("provider_listings")
      .select("id")
      .where("id", "=", listingId)
      .where(visibleTo(instanceId))
      .executeTakeFirst();
    if (!listing) throw ApiError.notFound(LISTING_ENTITY, listingId);
    try {
      await this.db
        .insertInto("provider_group_listings")
        .values({ provider_group_id: id, provider_listing_id: listingId })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new ApiError("conflict", `Provider group ${id} already holds listing ${listingId}.`, { entity: ENTITY });
      }
      throw err;
    }
    return this.touch(instanceId, id);
  }

  async removeListing(instanceId: string, id: string, listingId: string): Promise<ProviderGroup> {
    await this.find(instanceId, id);
    const removed = await this.db
      .deleteFrom("provider_group_listings")
      .where("provider_group_id", "=", id)
      .where("provider_listing_id", "=", listingId)
      .executeTakeFirst();
    if (removed.numDeletedRows === 0n) {
      throw new ApiError("not_found", `Provider group ${id} does not hold listing ${listingId}.`, {
        entity: LISTING_ENTITY,
      });
    }
    return this.touch(instanceId, id);
  }

  private async touch(instanceId: string, id: string): Promise<ProviderGroup> {
    await this.db.updateTable("provider_groups").set({ updated_at: new Date() }).where("id", "=", id).execute();
    return this.get(instanceId, id);
  }

  private async find(instanceId: string, id: string): Promise<Row<"provider_groups">> {
    const row = await this.db
      .selectFrom("provider_groups")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return row;
  }

  /** The listings of several groups in one query, each group's in the order they were added. */
  private async listingsOf(groupIds: string[]): Promise<Map<string, ProviderListing[]>> {
    const byGroup = new Map<string, ProviderListing[]>();
    if (groupIds.length === 0) return byGroup;
    const rows = await this.db
      .selectFrom("provider_group_listings as gl")
      .innerJoin("provider_listings as l", "l.id", "gl.provider_listing_id")
      .innerJoin("providers as p", "p.id", "l.provider_id")
      .select(["gl.provider_group_id", "l.id", "l.provider_id", "p.name", "p.description", "p.slug"])
      .where("gl.provider_group_id", "in", groupIds)
      .orderBy("gl.added_at")
      .orderBy("l.id")
      .execute();
    for (const r of rows) {
      const list = byGroup.get(r.provider_group_id) ?? [];
      list.push(toListing(r));
      byGroup.set(r.provider_group_id, list);
    }
    return byGroup;
  }
}

function toApi(row: Row<"provider_groups">, listings: ProviderListing[]): ProviderGroup {
  return {
    object: "provider.group",
    id: row.id,
    name: row.name,
    description: row.description,
    slug: row.slug,
    listings,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { insertWithUniqueSlug } from "../../lib/slugged-insert.ts";
import { iso } from "../../lib/time.ts";

type Portal = components["schemas"]["Portal"];
type PortalCreate = components["schemas"]["PortalCreate"];
type PortalUpdate = components["schemas"]["PortalUpdate"];

export const PORTAL_ENTITY = "portal";

export class PortalService {
  constructor(
    private readonly db: Db,
    private readonly publicUrl: string,
  ) {}

  async list(instanceId: string, params: ListParams) {
    const query = this.db.selectFrom("portals").selectAll().where("instance_id", "=", instanceId);
    const { rows, pagination } = await paginate(query, "portals.id", params);
    return { items: rows.map((r) => this.toApi(r)), pagination };
  }

  async get(instanceId: string, id: string): Promise<Portal> {
    return this.toApi(await this.find(instanceId, id));
  }

  async create(instanceId: string, body: PortalCreate): Promise<Portal> {
    const now = new Date();
    const row = await insertWithUniqueSlug(this.db, "portals", instanceId, body.name, (slug) =>
      this.db
        .insertInto("portals")
        .values({
          id: newId("ptl"),
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
    return this.toApi(row);
  }

  async update(instanceId: string, id: string, body: PortalUpdate): Promise<Portal> {
    const row = await this.db
      .updateTable("portals")
      .set({
        ...describedPatch(body),
        ...(body.brand_name === undefined ? {} : { brand_name: body.brand_name }),
        ...(body.session_expiry_time_in_seconds === undefined
          ? {}
          : { session_expiry_seconds: body.session_expiry_time_in_seconds }),
        ...(body.status === undefined ? {} : { status: body.status }),
      })
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(PORTAL_ENTITY, id);
    return this.toApi(row);
  }

  /** Deletes the portal; its consumer access goes with it (ON DELETE CASCADE), consumer groups stay. */
  async delete(instanceId: string, id: string): Promise<Portal> {
    const row = await this.db
      .deleteFrom("portals")
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(PORTAL_ENTITY, id);
    return this.toApi(row);
  }

  async find(instanceId: string, id: string): Promise<Row<"portals">> {
    const row = await this.db
      .selectFrom("portals")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(PORTAL_ENTITY, id);
    return row;
  }

  private toApi(row: Row<"portals">): Portal {
    return {
      object: "portal",
      id: row.id,
      status: row.status as Portal["status"],
      name: row.name,
      slug: row.slug,
      description: row.description,
      auth: { object: "portal.auth", session_expiry_time_in_seconds: row.session_expiry_seconds },
      urls: [{ type: "portal", url: `${this.publicUrl}/p/${row.id}` }],
      brand: { name: row.brand_name },
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    };
  }
}

import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import { isUniqueViolation } from "../../lib/db-errors.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { PortalConsumerService } from "../portal-consumers/service.ts";
import type { PortalService } from "../portals/service.ts";

type ConsumerAccess = components["schemas"]["PortalConsumerAccess"];
type ConsumerAccessCreate = components["schemas"]["PortalConsumerAccessCreate"];

const ENTITY = "portal.consumer_access";

export interface ConsumerAccessFilters extends ListParams {
  consumer_group_id?: string[];
  server_deployment_template_id?: string[];
  type?: "server_deployment_template"[];
}

export class PortalConsumerAccessService {
  constructor(
    private readonly db: Db,
    private readonly portals: PortalService,
    private readonly consumers: PortalConsumerService,
  ) {}

  async list(instanceId: string, portalId: string, filters: ConsumerAccessFilters) {
    await this.portals.find(instanceId, portalId);
    let query = this.selectAccess(instanceId).where("a.portal_id", "=", portalId);
    if (filters.consumer_group_id) query = query.where("a.consumer_group_id", "in", filters.consumer_group_id);
    if (filters.server_deployment_template_id) {
      query = query.where("a.session_template_id", "in", filters.server_deployment_template_id);
    }
    if (filters.type) query = query.where("a.access_type", "in", filters.type);
    const { rows, pagination } = await paginate(query, "a.id", filters);
    return { items: rows.map(toApi), pagination };
  }

  async get(instanceId: string, portalId: string, id: string): Promise<ConsumerAccess> {
    await this.portals.find(instanceId, portalId);
    const row = await this.selectAccess(instanceId)
      .where("a.portal_id", "=", portalId)
      .where("a.id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return toApi(row);
  }

  async create(instanceId: string, portalId: string, body: ConsumerAccessCreate): Promise<ConsumerAccess> {
    await this.portals.find(instanceId, portalId);
    const templateId = body.access.server_deployment_template_id;
    const id = newId("pca");
    await this.db.transaction().execute(async (trx) => {
      const template = await trx
        .selectFrom("session_templates")
        .select("id")
        .where("instance_id", "=", instanceId)
        .where("id", "=", templateId)
        .executeTakeFirst();
      if (!template) throw ApiError.notFound("session.template", templateId);
      await trx
        .insertInto("consumer_groups")
        .values({ id: body.consumer_group_id, instance_id: instanceId })
        .onConflict((oc) => oc.columns(["instance_id", "id"]).doNothing())
        .execute();
      const now = new Date();
      try {
        await trx
          .insertInto("portal_consumer_access")
          .values({
            id,
            instance_id: instanceId,
            portal_id: portalId,
            consumer_group_id: body.consumer_group_id,
            access_type: body.access.type,
            session_template_id: templateId,
            created_at: now,
            updated_at: now,
          })
          .execute();
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        throw new ApiError(
          "conflict",
          `Consumer group ${body.consumer_group_id} already has access to session template ${templateId} on portal ${portalId}.`,
          { entity: ENTITY },
        );
      }
    });
    return this.get(instanceId, portalId, id);
  }

  /** Deletes the access; sessions its consumers started that no other access allows end in the same transaction. */
  async delete(instanceId: string, portalId: string, id: string): Promise<ConsumerAccess> {
    const existing = await this.get(instanceId, portalId, id);
    await this.db.transaction().execute(async (trx) => {
      await trx
        .deleteFrom("portal_consumer_access")
        .where("id", "=", id)
        .where("instance_id", "=", instanceId)
        .execute();
      await this.consumers.endUnentitledSessions(trx, portalId);
    });
    return existing;
  }

  private selectAccess(instanceId: string) {
    return this.db
      .selectFrom("portal_consumer_access as a")
      .innerJoin("session_templates as t", "t.id", "a.session_template_id")
      .innerJoin("consumer_groups as g", (join) =>
        join.onRef("g.instance_id", "=", "a.instance_id").onRef("g.id", "=", "a.consumer_group_id"),
      )
      .select([
        "a.id",
        "a.portal_id",
        "a.access_type",
        "a.created_at",
        "a.updated_at",
        "t.id as template_id",
        "t.name as template_name",
        "g.id as group_id",
        "g.status as group_status",
      ])
      .where("a.instance_id", "=", instanceId);
  }
}

interface AccessRow {
  id: string;
  portal_id: string;
  created_at: Date;
  updated_at: Date;
  template_id: string;
  template_name: string;
  group_id: string;
  group_status: string;
}

function toApi(row: AccessRow): ConsumerAccess {
  return {
    object: "consumer.group",
    id: row.id,
    portal_id: row.portal_id,
    access: {
      type: "server_deployment_template",
      server_deployment_template: {
        object: "server.server_deployment.template",
        id: row.template_id,
        name: row.template_name,
        // A template names a single catalog server only through its providers; templates have no providers
        // until the sessions issue lands, so there is no server to show yet.
        server: null,
      },
    },
    consumer_group: { object: "consumer.group", id: row.group_id, status: row.group_status as "active" },
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

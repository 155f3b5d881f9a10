import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { iso } from "../../lib/time.ts";
import { providerColumns, resolveEntries } from "../sessions/provider-entries.ts";

type SessionTemplate = components["schemas"]["SessionTemplate"];
type SessionTemplateCreate = components["schemas"]["SessionTemplateCreate"];
type SessionTemplateUpdate = components["schemas"]["SessionTemplateUpdate"];

export const TEMPLATE_ENTITY = "session.template";

export class SessionTemplateService {
  constructor(private readonly db: Db) {}

  async list(instanceId: string, params: ListParams) {
    const query = this.db.selectFrom("session_templates").selectAll().where("instance_id", "=", instanceId);
    const { rows, pagination } = await paginate(query, "session_templates.id", params);
    return { items: rows.map(toApi), pagination };
  }

  async find(instanceId: string, id: string, db: Db = this.db): Promise<Row<"session_templates">> {
    const row = await db
      .selectFrom("session_templates")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(TEMPLATE_ENTITY, id);
    return row;
  }

  async get(instanceId: string, id: string): Promise<SessionTemplate> {
    return toApi(await this.find(instanceId, id));
  }

  /** Creates the template and its providers in one transaction. */
  async create(instanceId: string, body: SessionTemplateCreate): Promise<SessionTemplate> {
    const row = await this.db.transaction().execute(async (trx) => {
      const providers = body.providers ? await resolveEntries(trx, instanceId, body.providers) : [];
      const now = new Date();
      const template = await trx
        .insertInto("session_templates")
        .values({
          id: newId("set"),
          instance_id: instanceId,
          name: body.name,
          description: body.description ?? null,
          metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      if (providers.length > 0) {
        await trx
          .insertInto("session_template_providers")
          .values(
            providers.map((p) => ({
              id: newId("stp"),
              instance_id: instanceId,
              session_template_id: template.id,
              ...providerColumns(p),
              created_at: now,
              updated_at: now,
            })),
          )
          .execute();
      }
      return template;
    });
    return toApi(row);
  }

  async update(instanceId: string, id: string, body: SessionTemplateUpdate): Promise<SessionTemplate> {
    const row = await this.db
      .updateTable("session_templates")
      .set(describedPatch(body))
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(TEMPLATE_ENTITY, id);
    return toApi(row);
  }
}

function toApi(r: Row<"session_templates">): SessionTemplate {
  return {
    object: "session.template",
    id: r.id,
    name: r.name,
    description: r.description,
    metadata: r.metadata,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

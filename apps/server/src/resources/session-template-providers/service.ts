import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { iso } from "../../lib/time.ts";
import type { SessionTemplateService } from "../session-templates/service.ts";
import { type ProviderTarget, providerColumns, resolveTarget } from "../sessions/provider-entries.ts";

type TemplateProvider = components["schemas"]["SessionTemplateProvider"];
type TemplateProviderCreate = components["schemas"]["SessionTemplateProviderCreate"];
type TemplateProviderUpdate = components["schemas"]["SessionTemplateProviderUpdate"];

const ENTITY = "session.template.provider";

export interface TemplateProviderFilters extends ListParams {
  provider_id?: string[];
}

export class SessionTemplateProviderService {
  constructor(
    private readonly db: Db,
    private readonly templates: SessionTemplateService,
  ) {}

  async list(instanceId: string, templateId: string, filters: TemplateProviderFilters) {
    await this.templates.find(instanceId, templateId);
    let query = this.select(instanceId, templateId);
    if (filters.provider_id) query = query.where("tp.provider_id", "in", filters.provider_id);
    const { rows, pagination } = await paginate(query, "tp.id", filters);
    return { items: rows.map(toApi), pagination };
  }

  async get(instanceId: string, templateId: string, id: string): Promise<TemplateProvider> {
    await this.templates.find(instanceId, templateId);
    return toApi(await this.find(instanceId, templateId, id));
  }

  async create(instanceId: string, templateId: string, body: TemplateProviderCreate): Promise<TemplateProvider> {
    const id = newId("stp");
    await this.db.transaction().execute(async (trx) => {
      await this.templates.find(instanceId, templateId, trx);
      const target = await resolveTarget(trx, instanceId, body, []);
      const now = new Date();
      await trx
        .insertInto("session_template_providers")
        .values({
          id,
          instance_id: instanceId,
          session_template_id: templateId,
          ...providerColumns({
            ...target,
            session_template_id: templateId,
            name: body.name ?? null,
            description: body.description ?? null,
            metadata: body.metadata ?? null,
          }),
          created_at: now,
          updated_at: now,
        })
        .execute();
    });
    return this.get(instanceId, templateId, id);
  }

  /** Applies the change, then checks the resulting deployment, config and auth config together. */
  async update(
    instanceId: string,
    templateId: string,
    id: string,
    body: TemplateProviderUpdate,
  ): Promise<TemplateProvider> {
    await this.db.transaction().execute(async (trx) => {
      await this.templates.find(instanceId, templateId, trx);
      const current = await this.find(instanceId, templateId, id, trx);
      const pick = <T>(given: T | null | undefined, stored: T | null): T | null =>
        given === undefined ? stored : given;
      const merged: ProviderTarget = {
        provider_deployment: body.provider_deployment ?? { provider_deployment_id: current.provider_deployment_id },
        provider_config: pick<{ provider_config_id: string }>(
          body.provider_config,
          current.provider_config_id ? { provider_config_id: current.provider_config_id } : null,
        ),
        provider_auth_config: pick<{ provider_auth_config_id: string }>(
          body.provider_auth_config,
          current.provider_auth_config_id ? { provider_auth_config_id: current.provider_auth_config_id } : null,
        ),
        tool_filters: pick(body.tool_filters, current.tool_filters),
      };
      const target = await resolveTarget(trx, instanceId, merged, []);
      await trx
        .updateTable("session_template_providers")
        .set({
          ...describedPatch(body),
          provider_id: target.provider_id,
          provider_deployment_id: target.provider_deployment_id,
          provider_config_id: target.provider_config_id,
          provider_auth_config_id: target.provider_auth_config_id,
          tool_filters: target.tool_filters === null ? null : JSON.stringify(target.tool_filters),
        })
        .where("id", "=", id)
        .execute();
    });
    return this.get(instanceId, templateId, id);
  }

  /** Deletes the template provider; sessions created from the template keep their copies. */
  async delete(instanceId: string, templateId: string, id: string): Promise<TemplateProvider> {
    const removed = await this.get(instanceId, templateId, id);
    await this.db
      .deleteFrom("session_template_providers")
      .where("instance_id", "=", instanceId)
      .where("session_template_id", "=", templateId)
      .where("id", "=", id)
      .execute();
    return removed;
  }

  private select(instanceId: string, templateId: string, db: Db = this.db) {
    return db
      .selectFrom("session_template_providers as tp")
      .innerJoin("provider_deployments as d", "d.id", "tp.provider_deployment_id")
      .leftJoin("provider_configs as c", "c.id", "tp.provider_config_id")
      .leftJoin("provider_auth_configs as ac", "ac.id", "tp.provider_auth_config_id")
      .selectAll("tp")
      .select(["d.name as deployment_name", "c.name as config_name", "ac.name as auth_config_name"])
      .where("tp.instance_id", "=", instanceId)
      .where("tp.session_template_id", "=", templateId);
  }

  private async find(instanceId: string, templateId: string, id: string, db: Db = this.db) {
    const row = await this.select(instanceId, templateId, db).where("tp.id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return row;
  }
}

type TemplateProviderRow = Awaited<ReturnType<SessionTemplateProviderService["find"]>>;

function toApi(r: TemplateProviderRow): TemplateProvider {
  return {
    object: "session.template.provider",
    id: r.id,
    name: r.name,
    description: r.description,
    metadata: r.metadata,
    session_template_id: r.session_template_id,
    provider_id: r.provider_id,
    provider_deployment_id: r.provider_deployment_id,
    provider_deployment_name: r.deployment_name,
    provider_config_id: r.provider_config_id,
    provider_config_name: r.config_name,
    provider_auth_config_id: r.provider_auth_config_id,
    provider_auth_config_name: r.auth_config_name,
    tool_filters: r.tool_filters,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { JsonObject, ToolFilters } from "../../db/schema.ts";

export type ProviderEntry = components["schemas"]["SessionProviderEntry"];
export type ProviderEntries = components["schemas"]["SessionProviderEntries"];
type Path = (string | number)[];

/** What a session provider or template provider is made of, checked against the tenant's data. */
export interface ResolvedProvider {
  provider_id: string;
  provider_deployment_id: string;
  provider_config_id: string | null;
  provider_auth_config_id: string | null;
  /** The template the provider was copied from, if any. */
  session_template_id: string | null;
  name: string | null;
  description: string | null;
  metadata: JsonObject | null;
  tool_filters: ToolFilters | null;
}

/** What resolveTarget checks: the references, and the filter that goes with them. */
export type ResolvedTarget = Pick<
  ResolvedProvider,
  "provider_id" | "provider_deployment_id" | "provider_config_id" | "provider_auth_config_id" | "tool_filters"
>;

/** The members that name one provider (a provider entry, or a create/update body of a (template) provider). */
export interface ProviderTarget {
  provider_deployment: { provider_deployment_id: string };
  provider_config?: { provider_config_id: string } | null;
  provider_auth_config?: { provider_auth_config_id: string } | null;
  tool_filters?: ToolFilters | null;
}

export const invalid = (message: string, path: Path): ApiError =>
  new ApiError("invalid_data", message, { entity: "body", errors: [{ code: "invalid", message, path }] });

const notFound = (entity: string, id: string, path: Path): ApiError =>
  new ApiError("not_found", `${entity} ${id} was not found.`, {
    entity,
    errors: [{ code: "not_found", message: `${entity} ${id} was not found`, path }],
  });

/**
 * Checks that the deployment, config and auth config are the tenant's and that the config and auth config
 * belong to that deployment. The rows are locked FOR SHARE so a concurrent delete (which locks its row FOR
 * UPDATE before looking for users, see assertNotUsedBySessions) waits for this transaction and sees the new use.
 */
export async function resolveTarget(
  trx: Db,
  instanceId: string,
  target: ProviderTarget,
  path: Path,
): Promise<ResolvedTarget> {
  const deploymentId = target.provider_deployment.provider_deployment_id;
  const deployment = await trx
    .selectFrom("provider_deployments")
    .select(["id", "provider_id"])
    .where("instance_id", "=", instanceId)
    .where("id", "=", deploymentId)
    .forShare()
    .executeTakeFirst();
  if (!deployment) {
    throw notFound("provider.deployment", deploymentId, [...path, "provider_deployment", "provider_deployment_id"]);
  }
  const children = [
    {
      table: "provider_configs",
      member: "provider_config",
      entity: "provider.config",
      id: target.provider_config?.provider_config_id,
    },
    {
      table: "provider_auth_configs",
      member: "provider_auth_config",
      entity: "provider.auth_config",
      id: target.provider_auth_config?.provider_auth_config_id,
    },
  ] as const;
  for (const child of children) {
    if (!child.id) continue;
    const idPath = [...path, child.member, `${child.member}_id`];
    const row = await trx
      .selectFrom(child.table)
      .select("provider_deployment_id")
      .where("instance_id", "=", instanceId)
      .where("id", "=", child.id)
      .forShare()
      .executeTakeFirst();
    if (!row) throw notFound(child.entity, child.id, idPath);
    if (row.provider_deployment_id !== deployment.id) {
      throw invalid(
        `${child.entity} ${child.id} belongs to deployment ${row.provider_deployment_id}, not to ${deployment.id}.`,
        idPath,
      );
    }
  }
  return {
    provider_id: deployment.provider_id,
    provider_deployment_id: deployment.id,
    provider_config_id: target.provider_config?.provider_config_id ?? null,
    provider_auth_config_id: target.provider_auth_config?.provider_auth_config_id ?? null,
    tool_filters: target.tool_filters ?? null,
  };
}

/**
 * Resolves the `providers` of a session or template create request, in order: a deployment entry becomes one
 * provider, a `session_template_id` entry becomes a copy of every provider of that template.
 */
export async function resolveEntries(
  trx: Db,
  instanceId: string,
  entries: ProviderEntries,
  path: Path = ["providers"],
): Promise<ResolvedProvider[]> {
  const list = Array.isArray(entries) ? entries : [entries];
  const out: ResolvedProvider[] = [];
  for (const [i, entry] of list.entries()) {
    const at = Array.isArray(entries) ? [...path, i] : path;
    if (entry.session_template_id !== undefined) {
      const extra = Object.keys(entry).filter((k) => k !== "session_template_id");
      if (extra.length > 0) {
        throw invalid(`An entry with session_template_id must not have ${extra.join(", ")}.`, [...at, extra[0] ?? ""]);
      }
      out.push(
        ...(await templateProviders(trx, instanceId, entry.session_template_id, [...at, "session_template_id"])),
      );
      continue;
    }
    const { provider_deployment } = entry;
    if (!provider_deployment) {
      throw invalid("An entry needs provider_deployment or session_template_id.", at);
    }
    out.push({
      ...(await resolveTarget(trx, instanceId, { ...entry, provider_deployment }, at)),
      session_template_id: null,
      name: null,
      description: null,
      metadata: null,
    });
  }
  return out;
}

async function templateProviders(trx: Db, instanceId: string, templateId: string, path: Path) {
  const template = await trx
    .selectFrom("session_templates")
    .select("id")
    .where("instance_id", "=", instanceId)
    .where("id", "=", templateId)
    .executeTakeFirst();
  if (!template) throw notFound("session.template", templateId, path);
  const rows = await trx
    .selectFrom("session_template_providers as tp")
    // Locks the deployments like resolveTarget does: the copies must not outlive a concurrent deployment delete.
    .innerJoin("provider_deployments as d", "d.id", "tp.provider_deployment_id")
    .select([
      "tp.provider_id",
      "tp.provider_deployment_id",
      "tp.provider_config_id",
      "tp.provider_auth_config_id",
      "tp.name",
      "tp.description",
      "tp.metadata",
      "tp.tool_filters",
    ])
    .where("tp.session_template_id", "=", templateId)
    .orderBy("tp.id")
    .forShare("d")
    .execute();
  return rows.map((r): ResolvedProvider => ({ ...r, session_template_id: templateId }));
}

/** The columns a resolved provider is stored with (sessions' and templates' provider tables share them). */
export const providerColumns = (p: ResolvedProvider) => ({
  provider_id: p.provider_id,
  provider_deployment_id: p.provider_deployment_id,
  provider_config_id: p.provider_config_id,
  provider_auth_config_id: p.provider_auth_config_id,
  name: p.name,
  description: p.description,
  metadata: p.metadata === null ? null : JSON.stringify(p.metadata),
  tool_filters: p.tool_filters === null ? null : JSON.stringify(p.tool_filters),
});

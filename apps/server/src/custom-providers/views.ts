import type { components } from "@toolplane/types";
import type { Db } from "../db/database.ts";
import type { Row } from "../db/schema.ts";
import { iso, isoOrNull } from "../lib/time.ts";
import { PUBLISHER_COLUMNS, toProviderVersion, toPublisher } from "../resources/providers/service.ts";

type Environment = components["schemas"]["CustomProviderEnvironment"];
type Version = components["schemas"]["CustomProviderVersion"];
type Commit = components["schemas"]["CustomProviderCommit"];
type CustomProvider = components["schemas"]["CustomProvider"];

/** A custom provider as the services see it once it was found in the caller's instance. */
export interface CustomProviderRef {
  id: string;
  instanceId: string;
  providerId: string;
  type: Row<"custom_providers">["type"];
  status: Row<"custom_providers">["status"];
}

export const refOf = (row: Row<"custom_providers">): CustomProviderRef => ({
  id: row.id,
  instanceId: row.instance_id,
  providerId: row.provider_id,
  type: row.type,
  status: row.status,
});

export const identifier = (index: number) => `v${index}`;

/** The environments of each custom provider, development first. */
async function environmentsOf(db: Db, refs: CustomProviderRef[]): Promise<Map<string, Environment[]>> {
  const out = new Map<string, Environment[]>(refs.map((r) => [r.id, []]));
  if (refs.length === 0) return out;
  const byId = new Map(refs.map((r) => [r.id, r]));
  const rows = await db
    .selectFrom("custom_provider_environments as e")
    .leftJoin("custom_provider_versions as v", "v.id", "e.current_version_id")
    .selectAll("e")
    .select("v.provider_version_id as current_provider_version_id")
    .where(
      "e.custom_provider_id",
      "in",
      refs.map((r) => r.id),
    )
    .orderBy("e.name")
    .execute();
  for (const e of rows) {
    const ref = byId.get(e.custom_provider_id);
    if (!ref) continue;
    out.get(ref.id)?.push({
      object: "custom_provider.environment",
      id: e.id,
      name: e.name,
      custom_provider_id: ref.id,
      provider_id: ref.providerId,
      current_provider_version_id: e.current_provider_version_id,
      current_custom_provider_version_id: e.current_version_id,
      instance_id: ref.instanceId,
      created_at: iso(e.created_at),
      updated_at: iso(e.updated_at),
    });
  }
  return out;
}

/** Builds versions (with deployment and environments) and commits of one custom provider, batching lookups. */
export class CustomProviderViews {
  private constructor(
    private readonly db: Db,
    private readonly ref: CustomProviderRef,
    private readonly envs: Map<string, Environment>,
  ) {}

  static async of(db: Db, ref: CustomProviderRef): Promise<CustomProviderViews> {
    const envs = (await environmentsOf(db, [ref])).get(ref.id) ?? [];
    return new CustomProviderViews(db, ref, new Map(envs.map((e) => [e.id, e])));
  }

  async versions(rows: Row<"custom_provider_versions">[]): Promise<Version[]> {
    if (rows.length === 0) return [];
    const development = [...this.envs.values()].find((e) => e.name === "development");
    const systemCommits = development
      ? await this.db
          .selectFrom("custom_provider_commits")
          .select(["id", "type", "message", "created_at", "target_version_id"])
          .where("to_environment_id", "=", development.id)
          .where("trigger", "=", "system")
          .where(
            "target_version_id",
            "in",
            rows.map((r) => r.id),
          )
          .execute()
      : [];
    const commitOf = new Map(systemCommits.map((c) => [c.target_version_id, c]));
    return rows.map((r) => {
      const commit = commitOf.get(r.id);
      return {
        object: "custom_provider.version",
        id: r.id,
        status: r.status,
        index: r.index,
        identifier: identifier(r.index),
        deployment: {
          object: "custom_provider.deployment",
          id: r.deployment_id,
          status: r.status,
          trigger: r.deployment_trigger,
          custom_provider_id: this.ref.id,
          provider_id: this.ref.providerId,
          custom_provider_version_id: r.id,
          commit: commit
            ? { id: commit.id, type: commit.type, message: commit.message, created_at: iso(commit.created_at) }
            : null,
          // The request context carries no API key identity yet, so no actor is recorded.
          actor: null,
          error: r.deployment_error,
          created_at: iso(r.created_at),
          updated_at: iso(r.updated_at),
        },
        environments: [...this.envs.values()]
          .filter((e) => e.current_custom_provider_version_id === r.id)
          .map((environment) => ({ object: "custom_provider.version.environment", id: environment.id, environment })),
        custom_provider_id: this.ref.id,
        provider_id: this.ref.providerId,
        provider_version_id: r.provider_version_id,
        actor: null,
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at),
      };
    });
  }

  async commits(rows: Row<"custom_provider_commits">[]): Promise<Commit[]> {
    const versionIds = [
      ...new Set(rows.flatMap((c) => [c.target_version_id, ...(c.previous_version_id ? [c.previous_version_id] : [])])),
    ];
    const versionRows = versionIds.length
      ? await this.db.selectFrom("custom_provider_versions").selectAll().where("id", "in", versionIds).execute()
      : [];
    const versions = new Map((await this.versions(versionRows)).map((v) => [v.id, v]));
    const env = (id: string) => {
      const e = this.envs.get(id);
      if (!e) throw new Error(`environment ${id} of ${this.ref.id} is missing`);
      return e;
    };
    const version = (id: string) => {
      const v = versions.get(id);
      if (!v) throw new Error(`version ${id} of ${this.ref.id} is missing`);
      return v;
    };
    return rows.map((c) => {
      const target = version(c.target_version_id);
      return {
        object: "custom_provider.commit",
        id: c.id,
        status: c.status,
        trigger: c.trigger,
        type: c.type,
        message: c.message,
        error: c.error,
        custom_provider_id: this.ref.id,
        provider_id: this.ref.providerId,
        custom_provider_deployment_id: target.deployment.id,
        to_environment: env(c.to_environment_id),
        from_environment: c.from_environment_id ? env(c.from_environment_id) : null,
        target_custom_provider_version: target,
        previous_custom_provider_version: c.previous_version_id ? version(c.previous_version_id) : null,
        actor: null,
        created_at: iso(c.created_at),
        applied_at: isoOrNull(c.applied_at),
      };
    });
  }
}

/** The custom provider with its catalog provider, publisher and current (production) provider version. */
export async function customProvidersToApi(db: Db, rows: Row<"custom_providers">[]): Promise<CustomProvider[]> {
  if (rows.length === 0) return [];
  const providers = await db
    .selectFrom("providers as p")
    .innerJoin("publishers as pub", "pub.id", "p.publisher_id")
    .leftJoin("provider_versions as v", "v.id", "p.current_version_id")
    .select([
      "p.id",
      "p.name",
      "p.description",
      "p.slug",
      "p.created_at",
      "p.updated_at",
      ...PUBLISHER_COLUMNS,
      "v.id as v_id",
      "v.version as v_version",
      "v.status as v_status",
      "v.created_at as v_created_at",
      "v.updated_at as v_updated_at",
    ])
    .where(
      "p.id",
      "in",
      rows.map((r) => r.provider_id),
    )
    .execute();
  const byId = new Map(providers.map((p) => [p.id, p]));
  const environments = await environmentsOf(db, rows.map(refOf));
  return rows.map((r) => {
    const p = byId.get(r.provider_id);
    if (!p) throw new Error(`provider ${r.provider_id} of ${r.id} is missing`);
    // Custom providers always have their instance's publisher (an inner join above).
    const publisher = toPublisher(p);
    if (!publisher) throw new Error(`publisher of provider ${p.id} is missing`);
    return {
      object: "custom_provider",
      id: r.id,
      status: r.status,
      type: r.type,
      name: r.name,
      description: r.description,
      metadata: r.metadata,
      provider: {
        object: "provider",
        id: p.id,
        name: p.name,
        description: p.description,
        slug: p.slug,
        publisher,
        current_version:
          p.v_id && p.v_version && p.v_status && p.v_created_at && p.v_updated_at
            ? toProviderVersion({
                id: p.v_id,
                version: p.v_version,
                status: p.v_status,
                created_at: p.v_created_at,
                updated_at: p.v_updated_at,
              })
            : null,
        created_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
      },
      environments: environments.get(r.id) ?? [],
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    };
  });
}

import { ApiError } from "@toolplane/server-stubs";
import type { components, operations } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { containsPattern, visibleTo } from "../../lib/filters.ts";
import { paginate } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import { toAuthMethod } from "../../oauth/flows.ts";

type Provider = components["schemas"]["Provider"];
type ProviderVersion = components["schemas"]["ProviderVersion"];
type Publisher = components["schemas"]["ProviderPublisher"];
type ListQuery = NonNullable<operations["listProviders"]["parameters"]["query"]>;

export const PROVIDER_ENTITY = "provider";

/** The short `provider.version` embedded in providers and custom providers. */
export const toProviderVersion = (
  v: Pick<Row<"provider_versions">, "id" | "version" | "status" | "created_at" | "updated_at">,
): ProviderVersion => ({
  object: "provider.version",
  id: v.id,
  version: v.version,
  status: v.status as ProviderVersion["status"],
  created_at: iso(v.created_at),
  updated_at: iso(v.updated_at),
});

/** The publisher's columns as provider queries select them, joined as `pub` (null when a left join found none). */
export const PUBLISHER_COLUMNS = [
  "pub.id as pub_id",
  "pub.name as pub_name",
  "pub.description as pub_description",
  "pub.slug as pub_slug",
  "pub.image_url as pub_image_url",
  "pub.created_at as pub_created_at",
  "pub.updated_at as pub_updated_at",
] as const;

interface PublisherRow {
  pub_id: string | null;
  pub_name: string | null;
  pub_description: string | null;
  pub_slug: string | null;
  pub_image_url: string | null;
  pub_created_at: Date | null;
  pub_updated_at: Date | null;
}

export const toPublisher = (p: PublisherRow): Publisher | null =>
  p.pub_id && p.pub_name && p.pub_slug && p.pub_created_at && p.pub_updated_at
    ? {
        object: "provider.publisher",
        id: p.pub_id,
        name: p.pub_name,
        description: p.pub_description,
        slug: p.pub_slug,
        image_url: p.pub_image_url,
        created_at: iso(p.pub_created_at),
        updated_at: iso(p.pub_updated_at),
      }
    : null;

export class ProviderService {
  constructor(private readonly db: Db) {}

  /** The catalog's providers and the instance's own, each with its publisher, listing and custom provider. */
  private visible(instanceId: string) {
    return this.db
      .selectFrom("providers as p")
      .leftJoin("publishers as pub", "pub.id", "p.publisher_id")
      .leftJoin("provider_listings as l", "l.provider_id", "p.id")
      .leftJoin("custom_providers as cp", "cp.provider_id", "p.id")
      .selectAll("p")
      .select([...PUBLISHER_COLUMNS, "l.id as listing_id", "cp.id as custom_provider_id"])
      .where(visibleTo(instanceId, "p.instance_id"));
  }

  async list(instanceId: string, filters: ListQuery) {
    let query = this.visible(instanceId);
    if (filters.search) {
      const pattern = containsPattern(filters.search);
      query = query.where((eb) =>
        eb.or([eb("p.name", "ilike", pattern), eb("p.slug", "ilike", pattern), eb("p.description", "ilike", pattern)]),
      );
    }
    if (filters.id?.length) query = query.where("p.id", "in", filters.id);
    const publishers = filters.publisher;
    if (publishers?.length) {
      query = query.where((eb) => eb.or([eb("pub.id", "in", publishers), eb("pub.slug", "in", publishers)]));
    }
    // Both types (or none) is no filter; one type is the side of the catalog/instance split it names.
    const types = new Set(filters.type ?? []);
    if (types.size === 1) query = query.where("p.instance_id", types.has("catalog") ? "is" : "is not", null);
    const { rows, pagination } = await paginate(query, "p.id", filters);
    return { items: await this.toApi(rows), pagination };
  }

  async get(instanceId: string, id: string): Promise<Provider> {
    const [provider] = await this.toApi(await this.visible(instanceId).where("p.id", "=", id).execute());
    if (!provider) throw ApiError.notFound(PROVIDER_ENTITY, id);
    return provider;
  }

  /** 404 unless the instance sees the provider (the catalog's or its own): the versions endpoints' scope. */
  async assertVisible(instanceId: string, id: string): Promise<void> {
    const row = await this.db
      .selectFrom("providers")
      .select("id")
      .where("id", "=", id)
      .where(visibleTo(instanceId))
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(PROVIDER_ENTITY, id);
  }

  /** Versions and auth methods of a whole page in one query each, oldest (first declared) first. */
  private async toApi(rows: Awaited<ReturnType<ReturnType<ProviderService["visible"]>["execute"]>>) {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [versions, methods] = await Promise.all([
      this.db.selectFrom("provider_versions").selectAll().where("provider_id", "in", ids).orderBy("id").execute(),
      this.db.selectFrom("provider_auth_methods").selectAll().where("provider_id", "in", ids).orderBy("id").execute(),
    ]);
    return rows.map((p): Provider => {
      const own = versions.filter((v) => v.provider_id === p.id);
      const current = own.find((v) => v.id === p.current_version_id);
      return {
        object: "provider",
        id: p.id,
        type: p.instance_id === null ? "catalog" : "custom",
        name: p.name,
        description: p.description,
        slug: p.slug,
        metadata: p.metadata,
        publisher: toPublisher(p),
        current_version: current ? toProviderVersion(current) : null,
        config_schema: current ? current.config_schema : null,
        versions: own.map(toProviderVersion),
        auth_methods: methods.filter((m) => m.provider_id === p.id).map(toAuthMethod),
        provider_listing_id: p.listing_id,
        custom_provider_id: p.custom_provider_id,
        created_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
      };
    });
  }
}

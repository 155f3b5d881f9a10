import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { JsonObject, Row } from "../../db/schema.ts";
import { visibleTo } from "../../lib/filters.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";

type Server = components["schemas"]["Server"];
type ServerVariant = components["schemas"]["ServerVariant"];
type ServerSource = components["schemas"]["ServerSource"];

/** How the catalog stores a variant (the server preview is added on the way out). */
export interface StoredServerVariant {
  status: ServerVariant["status"];
  source: ServerSource;
  current_version: {
    oauth_status: "not_required" | "required";
    source: ServerSource;
    schema: JsonObject;
    created_at: string;
  };
}

/**
 * The stored variants of a provider's server: one for its current version (how it is reached, its config schema,
 * whether it needs OAuth), none while it has no current version. The catalog loader and custom providers both
 * store them this way.
 */
export function storedVariants(
  current: { source: ServerSource; schema: JsonObject; createdAt: string } | null,
  options: { oauthRequired: boolean; status?: ServerVariant["status"] },
): StoredServerVariant[] {
  if (!current) return [];
  return [
    {
      status: options.status ?? "active",
      source: current.source,
      current_version: {
        oauth_status: options.oauthRequired ? "required" : "not_required",
        source: current.source,
        schema: current.schema,
        created_at: current.createdAt,
      },
    },
  ];
}

export class ServerService {
  constructor(private readonly db: Db) {}

  /** Catalog servers are visible to every instance; an instance's own (custom provider) servers only to it. */
  private visible(instanceId: string) {
    return this.db.selectFrom("servers").selectAll().where(visibleTo(instanceId));
  }

  async list(instanceId: string, params: ListParams) {
    const { rows, pagination } = await paginate(this.visible(instanceId), "id", params);
    return { items: rows.map(toApi), pagination };
  }

  async get(instanceId: string, id: string): Promise<Server> {
    const row = await this.visible(instanceId).where("id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound("server", id);
    return toApi(row);
  }
}

function toApi(row: Row<"servers">): Server {
  const preview = { object: "server" as const, id: row.id, type: "public" as const };
  return {
    object: "server",
    id: row.id,
    type: "public",
    status: row.status as Server["status"],
    name: row.name,
    description: row.description,
    imported_server_id: row.imported_server_id,
    variants: (row.variants as unknown as StoredServerVariant[]).map((v) => ({
      object: "server.server_variant",
      status: v.status,
      server: preview,
      source: v.source,
      current_version: {
        object: "server.server_version",
        oauth: { status: v.current_version.oauth_status },
        source: v.current_version.source,
        schema: v.current_version.schema,
        server: preview,
        created_at: iso(v.current_version.created_at),
      },
    })),
    metadata: row.metadata,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

import { ApiError } from "@toolplane/server-stubs";
import type { components, operations } from "@toolplane/types";
import { OAUTH_TOKEN_SCHEMA } from "../../catalog/loader.ts";
import { createVersion } from "../../custom-providers/environments.ts";
import { notifyDeployJobs } from "../../custom-providers/job-runner.ts";
import { syncCustomProviderServer } from "../../custom-providers/server.ts";
import { prepareVersion } from "../../custom-providers/source.ts";
import { type CustomProviderRef, customProvidersToApi, refOf } from "../../custom-providers/views.ts";
import type { Db } from "../../db/database.ts";
import { containsPattern } from "../../lib/filters.ts";
import { newId } from "../../lib/ids.ts";
import { paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { slugify } from "../../lib/slug.ts";
import { insertWithUniqueSlug } from "../../lib/slugged-insert.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";

type CustomProvider = components["schemas"]["CustomProvider"];
type Create = components["schemas"]["CustomProviderCreate"];
type Update = components["schemas"]["CustomProviderUpdate"];
type ListQuery = NonNullable<operations["listCustomProviders"]["parameters"]["query"]>;

export const CUSTOM_PROVIDER_ENTITY = "custom_provider";

export class CustomProviderService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
  ) {}

  /** The caller's custom provider, or 404 (another instance's id included). `lock` holds it for the transaction. */
  async ref(db: Db, instanceId: string, id: string, lock = false): Promise<CustomProviderRef> {
    let query = db
      .selectFrom("custom_providers")
      .selectAll()
      .where("id", "=", id)
      .where("instance_id", "=", instanceId);
    if (lock) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    if (!row) throw ApiError.notFound(CUSTOM_PROVIDER_ENTITY, id);
    return refOf(row);
  }

  async list(instanceId: string, filters: ListQuery) {
    let query = this.db.selectFrom("custom_providers").selectAll().where("instance_id", "=", instanceId);
    if (filters.search) {
      const pattern = containsPattern(filters.search);
      query = query.where((eb) => eb.or([eb("name", "ilike", pattern), eb("description", "ilike", pattern)]));
    }
    if (filters.status?.length) query = query.where("status", "in", filters.status);
    if (filters.type?.length) query = query.where("type", "in", filters.type);
    if (filters.ids?.length) query = query.where("id", "in", filters.ids);
    const { rows, pagination } = await paginate(query, "id", filters);
    return { items: await customProvidersToApi(this.db, rows), pagination };
  }

  async get(instanceId: string, id: string): Promise<CustomProvider> {
    const row = await this.db
      .selectFrom("custom_providers")
      .selectAll()
      .where("id", "=", id)
      .where("instance_id", "=", instanceId)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(CUSTOM_PROVIDER_ENTITY, id);
    const [api] = await customProvidersToApi(this.db, [row]);
    if (!api) throw ApiError.notFound(CUSTOM_PROVIDER_ENTITY, id);
    return api;
  }

  /**
   * One transaction: the instance's publisher (made on first use), the catalog provider and its listing, the
   * custom provider, its two environments, v1 with its deployment job and system commit into development, and
   * its server (no variant until a version reaches production).
   */
  async create(instanceId: string, body: Create): Promise<CustomProvider> {
    const prepared = prepareVersion(body.from, body.config);
    const id = newId("cpr");
    await this.db.transaction().execute(async (trx) => {
      const now = new Date();
      const publisherId = await this.publisherOf(trx, instanceId);
      const providerId = await this.insertProvider(trx, instanceId, publisherId, body);
      // A server added by URL may want MCP OAuth: its sign-in is discovered from the server, nothing to declare.
      if (body.from.type === "remote") {
        await trx
          .insertInto("provider_auth_methods")
          .values({
            id: newId("pam"),
            provider_id: providerId,
            provider_version_id: null,
            key: "mcp_oauth",
            type: "mcp_oauth",
            name: "Sign in to the MCP server",
            description:
              "MCP OAuth: the authorization server is discovered from the server, the client registered by Toolplane.",
            input_schema: JSON.stringify(OAUTH_TOKEN_SCHEMA),
            scopes: JSON.stringify([]),
            oauth: null,
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      await trx
        .insertInto("provider_listings")
        .values({
          id: newId("plg"),
          provider_id: providerId,
          instance_id: instanceId,
          created_at: now,
          updated_at: now,
        })
        .execute();
      const row = await trx
        .insertInto("custom_providers")
        .values({
          id,
          instance_id: instanceId,
          provider_id: providerId,
          type: body.from.type,
          name: body.name,
          description: body.description ?? null,
          metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .insertInto("custom_provider_environments")
        .values(
          (["development", "production"] as const).map((name) => ({
            id: newId("cpe"),
            custom_provider_id: id,
            name,
            current_version_id: null,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      await createVersion(trx, refOf(row), prepared, "custom_provider_created", this.secrets);
      await syncCustomProviderServer(trx, id);
    });
    notifyDeployJobs();
    return this.get(instanceId, id);
  }

  /**
   * Name and description follow to the catalog provider (its slug stays) and its server; `status` archives or
   * reactivates the custom provider and its server.
   */
  async update(instanceId: string, id: string, body: Update): Promise<CustomProvider> {
    await this.db.transaction().execute(async (trx) => {
      const ref = await this.ref(trx, instanceId, id, true);
      const patch = describedPatch(body);
      await trx
        .updateTable("custom_providers")
        .set({ ...patch, ...(body.status ? { status: body.status } : {}) })
        .where("id", "=", ref.id)
        .execute();
      if (body.name !== undefined || body.description !== undefined) {
        await trx
          .updateTable("providers")
          .set({
            ...(body.name === undefined ? {} : { name: body.name }),
            ...(body.description === undefined ? {} : { description: body.description }),
            updated_at: patch.updated_at,
          })
          .where("id", "=", ref.providerId)
          .execute();
      }
      await syncCustomProviderServer(trx, ref.id);
    });
    return this.get(instanceId, id);
  }

  /** Custom providers are published by their instance: one publisher per instance, named like it. */
  private async publisherOf(trx: Db, instanceId: string): Promise<string> {
    const existing = await trx
      .selectFrom("publishers")
      .select("id")
      .where("instance_id", "=", instanceId)
      .orderBy("id")
      .executeTakeFirst();
    if (existing) return existing.id;
    const instance = await trx
      .selectFrom("instances")
      .select("name")
      .where("id", "=", instanceId)
      .executeTakeFirstOrThrow();
    const inserted = await trx
      .insertInto("publishers")
      .values({
        id: newId("pub"),
        instance_id: instanceId,
        slug: slugify(instance.name),
        name: instance.name,
        description: null,
        image_url: null,
      })
      // A concurrent first custom provider may have made it; then use that one.
      .onConflict((oc) => oc.doNothing())
      .returning("id")
      .executeTakeFirst();
    return (
      inserted?.id ??
      (await trx.selectFrom("publishers").select("id").where("instance_id", "=", instanceId).executeTakeFirstOrThrow())
        .id
    );
  }

  /**
   * The catalog provider, with a slug from the name that is free among the catalog's and the instance's
   * providers. `on conflict do nothing` (not a caught unique violation) keeps the transaction usable on a race.
   */
  private async insertProvider(trx: Db, instanceId: string, publisherId: string, body: Create): Promise<string> {
    const inserted = await insertWithUniqueSlug(trx, "providers", instanceId, body.name, (slug) =>
      trx
        .insertInto("providers")
        .values({
          id: newId("pro"),
          instance_id: instanceId,
          name: body.name,
          slug,
          description: body.description ?? null,
          publisher_id: publisherId,
          current_version_id: null,
        })
        .onConflict((oc) => oc.doNothing())
        .returning("id")
        .executeTakeFirst(),
    );
    return inserted.id;
  }
}

/**
 * Rows that no API creates yet, put straight into the server's database. Each helper says which issue's API
 * replaces it: once that lands, create the row through the client instead (and check that call too).
 */
import { loadCatalog, newId } from "@toolplane/server";
import type { SuiteContext } from "./context.ts";

/** A provider listing of the shared catalog (the built-in catalog is loaded at start); seeded if it is empty. */
export async function catalogListingId(ctx: SuiteContext, index = 0): Promise<string> {
  const rows = await ctx.db
    .selectFrom("provider_listings")
    .select("id")
    .where("instance_id", "is", null)
    .orderBy("id")
    .execute();
  const row = rows[index];
  if (row) return row.id;
  return (await seedListing(ctx, null, `Contract provider ${index}`)).listingId;
}

/**
 * A provider and its listing, with no versions; `instanceId` makes it that instance's own (custom provider)
 * listing. A deployment of it has no runnable version (what the 409s of the config operations are about).
 */
export async function seedListing(
  ctx: SuiteContext,
  instanceId: string | null,
  name: string,
): Promise<{ providerId: string; listingId: string }> {
  const providerId = newId("pro");
  const listingId = newId("plg");
  await ctx.db
    .insertInto("providers")
    .values({
      id: providerId,
      instance_id: instanceId,
      name,
      slug: `${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${providerId.slice(-6)}`,
      description: `${name} tools`,
    })
    .execute();
  await ctx.db
    .insertInto("provider_listings")
    .values({ id: listingId, provider_id: providerId, instance_id: instanceId })
    .execute();
  return { providerId, listingId };
}

/** A provider of the built-in catalog with a current version, `github` when present (its config has a field). */
export async function catalogProvider(ctx: SuiteContext): Promise<{ providerId: string; currentVersionId: string }> {
  const rows = await ctx.db
    .selectFrom("providers")
    .select(["id", "slug", "current_version_id"])
    .where("instance_id", "is", null)
    .where("current_version_id", "is not", null)
    .orderBy("slug")
    .execute();
  const row = rows.find((r) => r.slug === "github") ?? rows[0];
  if (!row?.current_version_id) throw new Error("The catalog has no provider with a current version");
  return { providerId: row.id, currentVersionId: row.current_version_id };
}

/** The id of the shared catalog's provider `slug` (the built-in `everything`, say). */
export async function catalogProviderId(ctx: SuiteContext, slug: string): Promise<string> {
  const row = await ctx.db
    .selectFrom("providers")
    .select("id")
    .where("slug", "=", slug)
    .where("instance_id", "is", null)
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * A catalog provider whose runtime is the remote MCP server at `url` (Streamable HTTP), loaded by the server's own
 * catalog loader as it loads the files of a catalog directory; loading it again (another run) points it at the new
 * URL. Returns its id. The API makes such providers too (custom providers from a remote URL), but their versions
 * are deployed by the server's job runner, which the contract server does not run (see custom-providers.ts).
 */
export async function remoteCatalogProvider(ctx: SuiteContext, slug: string, url: string): Promise<string> {
  const ids = await loadCatalog(ctx.db, [
    {
      slug,
      name: `Contract ${slug}`,
      description: `The MCP server at ${url}, started by the contract run`,
      publisher: { slug: "toolplane-contract", name: "Toolplane contract tests" },
      current_version: "1.0.0",
      versions: [
        {
          version: "1.0.0",
          status: "released",
          runtime: { type: "remote", url, protocol: "streamable_http" },
          config_schema: { type: "object", properties: {}, additionalProperties: false },
          tools: [],
        },
      ],
      auth_methods: [],
    },
  ]);
  const id = ids.get(slug);
  if (!id) throw new Error(`The catalog loader did not load ${slug}`);
  return id;
}

/** A session template of the instance (replace with POST /session-templates once that issue lands). */
export async function seedSessionTemplate(ctx: SuiteContext, instanceId: string, name: string): Promise<string> {
  const id = newId("set");
  await ctx.db
    .insertInto("session_templates")
    .values({ id, instance_id: instanceId, name, description: null })
    .execute();
  return id;
}

/** A server of the shared catalog; the built-in catalog provides them. */
export async function catalogServerId(ctx: SuiteContext): Promise<string> {
  const row = await ctx.db
    .selectFrom("servers")
    .select("id")
    .where("instance_id", "is", null)
    .orderBy("id")
    .executeTakeFirst();
  if (!row) throw new Error("The catalog has no servers: the servers suite needs at least one catalog entry");
  return row.id;
}

/** The provider's auth method ids by type (from the catalog): `oauth` for auth configs, `token` for the 400. */
export async function authMethods(
  ctx: SuiteContext,
  providerId: string,
): Promise<{ oauth: string | undefined; token: string | undefined }> {
  const rows = await ctx.db
    .selectFrom("provider_auth_methods")
    .select(["id", "type"])
    .where("provider_id", "=", providerId)
    .orderBy("id")
    .execute();
  return { oauth: rows.find((r) => r.type === "oauth")?.id, token: rows.find((r) => r.type === "token")?.id };
}

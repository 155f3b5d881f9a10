import type { Db } from "../../src/db/database.ts";
import { newId } from "../../src/lib/ids.ts";
import type { StoredServerVariant } from "../../src/resources/servers/service.ts";

/** Puts a provider and its listing into the catalog tables (what the catalog loader does for catalog/ files). */
export async function seedCatalogProvider(db: Db, name: string, instanceId: string | null = null) {
  const providerId = newId("pro");
  const listingId = newId("plg");
  const slug = `${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${providerId.slice(-6)}`;
  await db
    .insertInto("providers")
    .values({ id: providerId, instance_id: instanceId, name, slug, description: `${name} tools` })
    .execute();
  await db
    .insertInto("provider_listings")
    .values({ id: listingId, provider_id: providerId, instance_id: instanceId })
    .execute();
  return { providerId, listingId, slug };
}

/** A session template row (its API lands with the sessions issue; portals only reference templates). */
export async function seedSessionTemplate(db: Db, instanceId: string, name: string) {
  const id = newId("set");
  await db.insertInto("session_templates").values({ id, instance_id: instanceId, name, description: null }).execute();
  return id;
}

/** A catalog server with one stdio variant; `instanceId` makes it an instance's own (custom provider) server. */
export async function seedServer(db: Db, name: string, instanceId: string | null = null) {
  const id = newId("srv");
  const source = { type: "stdio" as const, stdio: { command: "node", args: ["server.js", "stdio"] } };
  const variants: StoredServerVariant[] = [
    {
      status: "active",
      source,
      current_version: {
        oauth_status: "not_required",
        source,
        schema: { type: "object", properties: {}, additionalProperties: false },
        created_at: new Date().toISOString(),
      },
    },
  ];
  await db
    .insertInto("servers")
    .values({
      id,
      instance_id: instanceId,
      name,
      description: `${name} server`,
      metadata: JSON.stringify({ origin: "test" }),
      variants: JSON.stringify(variants),
    })
    .execute();
  return id;
}

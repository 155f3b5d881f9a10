import type { Db } from "../../src/db/database.ts";
import { newId } from "../../src/lib/ids.ts";

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

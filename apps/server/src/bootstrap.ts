import { createApiKey, createInstance } from "./auth/api-keys.ts";
import { BUILTIN_CATALOG_DIR, loadCatalog, readCatalog } from "./catalog/loader.ts";
import type { Config } from "./config.ts";
import { type DatabaseHandle, openDatabase } from "./db/database.ts";
import { migrate } from "./db/migrate.ts";

/** Opens the configured database, applies pending migrations and loads the catalog. */
export async function openMigratedDatabase(
  config: Pick<Config, "databaseUrl" | "dataDir"> & Partial<Pick<Config, "catalogDirs">>,
): Promise<DatabaseHandle> {
  const handle = await openDatabase(
    config.databaseUrl ? { kind: "postgres", url: config.databaseUrl } : { kind: "pglite", dataDir: config.dataDir },
  );
  try {
    await migrate(handle.db);
    await loadCatalog(handle.db, readCatalog(config.catalogDirs ?? [BUILTIN_CATALOG_DIR]));
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}

/** On an empty database, creates the first instance and an API key for it; returns the key only then. */
export async function ensureFirstInstance(handle: DatabaseHandle): Promise<string | undefined> {
  const existing = await handle.db.selectFrom("instances").select("id").limit(1).executeTakeFirst();
  if (existing) return undefined;
  const instanceId = await createInstance(handle.db, "default");
  const { key } = await createApiKey(handle.db, instanceId, "first key");
  return key;
}

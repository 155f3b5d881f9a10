import { createApiKey, createInstance } from "./auth/api-keys.ts";
import { BUILTIN_CATALOG_DIR, syncCatalog } from "./catalog/loader.ts";
import type { Config } from "./config.ts";
import { type DatabaseHandle, openDatabase } from "./db/database.ts";
import { type MigrationLog, migrate } from "./db/migrate.ts";

/** Opens the configured database, applies pending migrations (logging each) and loads the catalog if it changed. */
export async function openMigratedDatabase(
  config: Pick<Config, "databaseUrl" | "dataDir"> & Partial<Pick<Config, "catalogDirs">>,
  log?: MigrationLog,
): Promise<DatabaseHandle> {
  const handle = await openDatabase(
    config.databaseUrl ? { kind: "postgres", url: config.databaseUrl } : { kind: "pglite", dataDir: config.dataDir },
  );
  try {
    const migrated = await migrate(handle.db, undefined, log);
    // A migration may reshape catalog rows, so the catalog is reloaded after one even when its files are unchanged.
    await syncCatalog(handle.db, config.catalogDirs ?? [BUILTIN_CATALOG_DIR], migrated.length > 0);
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

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import type { Db } from "./database.ts";

const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url));
/** Any constant: serialises migrators of several processes sharing one PostgreSQL. */
const MIGRATION_LOCK = 724_311;

export interface Migration {
  version: string;
  sql: string;
}

/** Where migrate reports each step: the server's pino logger, or the CLI's stderr. */
export interface MigrationLog {
  info(fields: Record<string, unknown>, message: string): void;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: f.replace(/\.sql$/, ""), sql: readFileSync(join(dir, f), "utf8") }));
}

/**
 * Applies the versioned SQL files not applied yet, in order, in one transaction: all or none. Statements are
 * run one by one (PGlite's extended protocol takes one statement at a time), so each ends with `;` at the end
 * of a line. Each file is logged as it is applied, and a failure names its file (an upgrade that stops at start
 * says which migration to look at; the transaction leaves the database as it was).
 */
export async function migrate(db: Db, migrations = listMigrations(), log?: MigrationLog): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql`create table if not exists schema_migrations (
      version text primary key,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const done = await sql<{ version: string }>`select version from schema_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => r.version));
    const ran: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      const file = `${m.version}.sql`;
      const startedAt = performance.now();
      log?.info({ migration: file }, "applying migration");
      try {
        for (const statement of splitStatements(m.sql)) await sql.raw(statement).execute(trx);
      } catch (err) {
        // The database's own error (and its SQLSTATE code) stays the cause; the message leads with the file.
        const reason = err instanceof Error ? err.message : String(err);
        throw Object.assign(new Error(`migration ${file} failed: ${reason}`, { cause: err }), {
          code: (err as { code?: unknown }).code,
        });
      }
      await sql`insert into schema_migrations (version) values (${m.version})`.execute(trx);
      log?.info({ migration: file, ms: Math.round(performance.now() - startedAt) }, "applied migration");
      ran.push(m.version);
    }
    return ran;
  });
}

export function splitStatements(script: string): string[] {
  return script
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
    .filter(Boolean);
}

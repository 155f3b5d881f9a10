import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import pg from "pg";
import type { Database } from "./schema.ts";

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  kind: "pglite" | "postgres";
  close(): Promise<void>;
}

export type DatabaseTarget =
  | { kind: "postgres"; url: string; poolSize?: number }
  | { kind: "pglite"; dataDir: string }
  /** An already-open PGlite (tests load a migrated snapshot into memory). */
  | { kind: "pglite-instance"; pglite: PGlite };

/** One data layer for both engines: the same Kysely queries and SQL migrations run on PGlite and PostgreSQL. */
export async function openDatabase(target: DatabaseTarget): Promise<DatabaseHandle> {
  if (target.kind === "postgres") {
    const pool = new pg.Pool({ connectionString: target.url, max: target.poolSize ?? 10 });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: "postgres", close: () => db.destroy() };
  }
  let pglite: PGlite;
  if (target.kind === "pglite") {
    mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
    pglite = await PGlite.create(target.dataDir);
  } else {
    pglite = target.pglite;
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    kind: "pglite",
    close: async () => {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
    },
  };
}

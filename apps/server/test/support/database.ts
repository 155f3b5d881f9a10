import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { inject } from "vitest";
import { type DatabaseHandle, openDatabase } from "../../src/db/database.ts";

export interface TestDatabase extends DatabaseHandle {
  /** The PGlite instance behind `db` (null on PostgreSQL): lets a test dump the raw data directory. */
  pglite: PGlite | null;
  /** The PostgreSQL database's URL (null on PGlite): lets a test start server processes over the same database. */
  url: string | null;
}

/** A fresh, migrated, real database for one test file: PGlite by default, PostgreSQL when TEST_DATABASE_URL is set. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    const snapshot = readFileSync(inject("pgliteSnapshot"));
    const pglite = await PGlite.create({ loadDataDir: new Blob([snapshot]) });
    return { ...(await openDatabase({ kind: "pglite-instance", pglite })), pglite, url: null };
  }
  const name = `toolplane_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name} template ${inject("postgresTemplate")}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ kind: "postgres", url: url.toString(), poolSize: 5 });
  return {
    ...handle,
    pglite: null,
    url: url.toString(),
    close: async () => {
      await handle.close();
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}

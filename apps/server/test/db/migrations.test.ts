import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DatabaseHandle } from "../../src/db/database.ts";
import { listMigrations, migrate, splitStatements } from "../../src/db/migrate.ts";
import { createTestDatabase } from "../support/database.ts";

let handle: DatabaseHandle;
beforeAll(async () => {
  handle = await createTestDatabase();
});
afterAll(() => handle.close());

describe("database", () => {
  it("runs on the engine the suite was asked for", () => {
    expect(handle.kind).toBe(process.env.TEST_DATABASE_URL ? "postgres" : "pglite");
  });

  it("has every migration applied, and applying again is a no-op", async () => {
    const applied = await sql<{ version: string }>`select version from schema_migrations order by version`.execute(
      handle.db,
    );
    expect(applied.rows.map((r) => r.version)).toEqual(listMigrations().map((m) => m.version));
    expect(await migrate(handle.db)).toEqual([]);
  });

  it("splits migration files into single statements", () => {
    expect(splitStatements("-- note\ncreate table a (x int);\n\ncreate index b on a (x);\n")).toEqual([
      "create table a (x int)",
      "create index b on a (x)",
    ]);
  });

  it("logs each migration it applies, names a failing file, and rolls it back whole", async () => {
    const broken = [
      ...listMigrations(),
      { version: "9998_fine", sql: "create table fine (x int);\n" },
      { version: "9999_broken", sql: "create table half (x int);\nselect nope;\n" },
    ];
    const logged: [Record<string, unknown>, string][] = [];
    const log = { info: (fields: Record<string, unknown>, message: string) => logged.push([fields, message]) };
    await expect(migrate(handle.db, broken, log)).rejects.toMatchObject({
      message: expect.stringMatching(/^migration 9999_broken\.sql failed: .*nope/),
      code: "42703",
    });
    expect(logged).toEqual([
      [{ migration: "9998_fine.sql" }, "applying migration"],
      [{ migration: "9998_fine.sql", ms: expect.any(Number) }, "applied migration"],
      [{ migration: "9999_broken.sql" }, "applying migration"],
    ]);
    const half = await sql<{
      n: string;
    }>`select count(*) as n from information_schema.tables where table_name in ('half', 'fine')`.execute(handle.db);
    expect(Number(half.rows[0]?.n)).toBe(0);
  });
});

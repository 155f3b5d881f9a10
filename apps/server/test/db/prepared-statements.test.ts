import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DatabaseHandle } from "../../src/db/database.ts";
import { createTestDatabase } from "../support/database.ts";

let handle: DatabaseHandle;
beforeAll(async () => {
  handle = await createTestDatabase();
  await sql`create table prepared_probe (id text primary key, a int)`.execute(handle.db);
  await sql`insert into prepared_probe values ('x', 1)`.execute(handle.db);
});
afterAll(() => handle.close());

describe("prepared statements", () => {
  const read = async () => (await sql`select * from prepared_probe where id = ${"x"}`.execute(handle.db)).rows;

  it("answer like unprepared ones, run after run", async () => {
    for (let i = 0; i < 3; i++) expect(await read()).toEqual([{ id: "x", a: 1 }]);
  });

  // Another process migrating the table under a prepared `select *` (a rolling upgrade): one request fails,
  // the connection prepares the statement again and the next one sees the new column.
  it("recover when a migration changes a table under them", async () => {
    await sql`alter table prepared_probe add column b text default 'new'`.execute(handle.db);
    const attempts = await Promise.allSettled([read(), read()]);
    const failures = attempts.filter((a) => a.status === "rejected");
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) expect((f.reason as { code?: string }).code).toBe("0A000");
    for (let i = 0; i < 12; i++) {
      const again = await read().catch((error: { code?: string }) => error.code);
      if (again !== "0A000") {
        expect(again).toEqual([{ id: "x", a: 1, b: "new" }]);
        return;
      }
    }
    throw new Error("still failing after 12 attempts");
  });
});

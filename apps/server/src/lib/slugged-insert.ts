import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { SlugCountersTable } from "../db/schema.ts";
import { slugify } from "./slug.ts";

export type SlugScope = SlugCountersTable["scope"];

/** A counter that keeps meeting taken slugs (see `reseed`) gives up on numbers after this many tries. */
const NUMBERED_ATTEMPTS = 5;

/**
 * Inserts a row whose slug derives from its name and must be unique in its scope: `name` while it is free (a
 * deleted row's slug is free again), else `name-2`, `name-3`, … The numbers come from an (instance, table, base)
 * counter claimed with one atomic upsert, so a create costs at most three statements however many equal names
 * arrive at once (it used to read every `name-N` slug and retry on every collision: 8 creates in 8 s at 500
 * concurrent clients).
 *
 * `insert` returns undefined when the slug is taken (`on conflict do nothing`, which also keeps a surrounding
 * transaction usable). A numbered slug is taken only when it was taken without the counter: rows older than it,
 * or a name like `Name 2` whose own base is `name-2`; the counter then jumps past the taken numbers once
 * (`reseed`). After NUMBERED_ATTEMPTS it falls back to a random suffix so no caller is refused.
 */
export async function insertWithUniqueSlug<T>(
  db: Db,
  scope: SlugScope,
  instanceId: string,
  name: string,
  insert: (slug: string) => Promise<T | undefined>,
): Promise<T> {
  const base = slugify(name);
  const plain = await insert(base);
  if (plain !== undefined) return plain;
  for (let attempt = 0; attempt < NUMBERED_ATTEMPTS; attempt++) {
    const inserted = await insert(`${base}-${await claimNumber(db, scope, instanceId, base)}`);
    if (inserted !== undefined) return inserted;
    await reseed(db, scope, instanceId, base, await takenSlugs(db, scope, instanceId, base));
  }
  for (;;) {
    const inserted = await insert(`${base}-${randomBytes(3).toString("hex")}`);
    if (inserted !== undefined) return inserted;
  }
}

/** The next number for `base`: 2 the first time (`base` itself is 1). */
async function claimNumber(db: Db, scope: SlugScope, instanceId: string, base: string): Promise<number> {
  const row = await db
    .insertInto("slug_counters")
    .values({ instance_id: instanceId, scope, base, last: 2 })
    .onConflict((oc) =>
      oc.columns(["instance_id", "scope", "base"]).doUpdateSet({ last: sql<number>`slug_counters.last + 1` }),
    )
    .returning("last")
    .executeTakeFirstOrThrow();
  return row.last;
}

/** Moves the counter past the highest number `taken` uses (`base` counts as 1), so the next claim is free. */
async function reseed(db: Db, scope: SlugScope, instanceId: string, base: string, taken: string[]): Promise<void> {
  const numbered = new RegExp(`^${base}-(\\d+)$`);
  const highest = Math.max(
    1,
    ...taken.map((slug) => (slug === base ? 1 : Number(numbered.exec(slug)?.[1] ?? 0))).filter(Number.isSafeInteger),
  );
  await db
    .updateTable("slug_counters")
    .set({ last: sql<number>`greatest(last, ${highest})` })
    .where("instance_id", "=", instanceId)
    .where("scope", "=", scope)
    .where("base", "=", base)
    .execute();
}

/**
 * The slugs `base` or `base-N` could collide with: the instance's rows in the scope's table (and, for providers,
 * the catalog's, which every instance shares).
 */
async function takenSlugs(db: Db, scope: SlugScope, instanceId: string, base: string): Promise<string[]> {
  const catalog = scope === "providers" ? sql`or instance_id is null` : sql``;
  const rows = await sql<{ slug: string }>`
    select slug from ${sql.table(scope)}
    where (instance_id = ${instanceId} ${catalog}) and (slug = ${base} or slug like ${`${base}-%`})`.execute(db);
  return rows.rows.map((r) => r.slug);
}

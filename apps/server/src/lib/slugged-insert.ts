import { randomBytes } from "node:crypto";
import type { Db } from "../db/database.ts";
import { isUniqueViolation } from "./db-errors.ts";
import { slugify, uniqueSlug } from "./slug.ts";

const DETERMINISTIC_ROUNDS = 16;

/**
 * Inserts a row whose slug derives from its name and must be unique in its scope: picks the first free
 * `name`, `name-2`, … and retries if a concurrent insert took it first (each round lets at least one of the
 * racers in, so a burst of up to DETERMINISTIC_ROUNDS identical names still gets `name-N`); beyond that it
 * falls back to a random suffix so no caller is refused.
 */
export async function insertWithUniqueSlug<T>(
  name: string,
  takenSlugs: (base: string) => Promise<string[]>,
  insert: (slug: string) => Promise<T>,
): Promise<T> {
  const base = slugify(name);
  for (let attempt = 0; ; attempt++) {
    const slug =
      attempt < DETERMINISTIC_ROUNDS
        ? uniqueSlug(base, new Set(await takenSlugs(base)))
        : `${base}-${randomBytes(3).toString("hex")}`;
    try {
      return await insert(slug);
    } catch (err) {
      if (!isUniqueViolation(err) || attempt >= DETERMINISTIC_ROUNDS + 5) throw err;
    }
  }
}

/** The slugs of an instance's rows in `table` that `base` or `base-N` could collide with. */
export const takenSlugs =
  (db: Db, table: "portals" | "provider_groups", instanceId: string) =>
  async (base: string): Promise<string[]> => {
    const rows = await db
      .selectFrom(table)
      .select("slug")
      .where("instance_id", "=", instanceId)
      .where((eb) => eb.or([eb("slug", "=", base), eb("slug", "like", `${base}-%`)]))
      .execute();
    return rows.map((r) => r.slug);
  };

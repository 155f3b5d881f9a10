import { isUniqueViolation } from "./db-errors.ts";
import { slugify, uniqueSlug } from "./slug.ts";

/**
 * Inserts a row whose slug derives from its name and must be unique in its scope: picks the first free
 * `name`, `name-2`, … and retries if a concurrent insert took it first.
 */
export async function insertWithUniqueSlug<T>(
  name: string,
  takenSlugs: (base: string) => Promise<string[]>,
  insert: (slug: string) => Promise<T>,
): Promise<T> {
  const base = slugify(name);
  for (let attempt = 0; ; attempt++) {
    const slug = uniqueSlug(base, new Set(await takenSlugs(base)));
    try {
      return await insert(slug);
    } catch (err) {
      if (!isUniqueViolation(err) || attempt >= 4) throw err;
    }
  }
}

import { createHash } from "node:crypto";

export const MAX_TOOL_KEY_LENGTH = 60;

const sanitize = (s: string) => s.replace(/[^a-zA-Z0-9_-]/g, "_");
const shortHash = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 8);

/** Keeps a key within 60 characters: a longer one keeps its head and ends with a hash of the whole. */
function withinLimit(key: string): string {
  if (key.length <= MAX_TOOL_KEY_LENGTH) return key;
  return `${key.slice(0, MAX_TOOL_KEY_LENGTH - 9)}_${shortHash(key)}`;
}

export interface KeyedSource {
  /** Distinguishes two providers of one session with the same slug (the session provider id). */
  id: string;
  slug: string;
  names: string[];
}

/**
 * Session-wide tool keys, deterministic for the same providers (in order) and tool lists, so every server process
 * computes the same keys. A tool's key is its upstream name with characters outside [a-zA-Z0-9_-] replaced by `_`;
 * names that collide across providers are prefixed with the provider slug (`slug_name`), and a collision left even
 * then (the same provider twice) gets a hash of the session provider id appended. Every key is at most 60 characters.
 * Returns, per source, the keys of its names in order.
 */
export function assignToolKeys(sources: KeyedSource[]): string[][] {
  const base = sources.map((s) => s.names.map((n) => withinLimit(sanitize(n))));
  const count = new Map<string, number>();
  for (const key of base.flat()) count.set(key, (count.get(key) ?? 0) + 1);
  const prefixed = base.map((keys, i) =>
    keys.map((key) => ((count.get(key) ?? 0) > 1 ? withinLimit(`${sanitize(sources[i]?.slug ?? "")}_${key}`) : key)),
  );
  const again = new Map<string, number>();
  for (const key of prefixed.flat()) again.set(key, (again.get(key) ?? 0) + 1);
  return prefixed.map((keys, i) =>
    keys.map((key) => {
      if ((again.get(key) ?? 0) <= 1) return key;
      const suffix = `_${shortHash(`${sources[i]?.id}:${key}`)}`;
      return `${key.slice(0, MAX_TOOL_KEY_LENGTH - suffix.length)}${suffix}`;
    }),
  );
}

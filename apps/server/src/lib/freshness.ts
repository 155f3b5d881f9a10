/**
 * MCP 2026-07-28 caching hints (server/utilities/caching) of results the gateway merges or keeps: how long a result
 * stays fresh, as an instant (a kept list ages), and whether it may be shared beyond its caller.
 */
export interface Freshness {
  /** Until when (epoch ms) the result may be considered fresh. */
  freshUntil: number;
  /** Every part said `cacheScope: "public"`. */
  shared: boolean;
}

/**
 * The hints of one result read at `readAt`. A result without them (every 2025 server's) is stale at once and
 * private, as the specification tells clients to assume.
 */
export function freshnessOf(result: Record<string, unknown>, readAt: number): Freshness {
  const ttlMs = result.ttlMs;
  const valid = typeof ttlMs === "number" && Number.isSafeInteger(ttlMs) && ttlMs >= 0;
  return { freshUntil: readAt + (valid ? ttlMs : 0), shared: result.cacheScope === "public" };
}

/** Stale at once and private: a result missing a part, or made of none (nothing says how long it holds). */
export const STALE: Freshness = { freshUntil: 0, shared: false };
/** What adds no limit to a merged result: the part of a server that has none of it (it never will, on that connection). */
export const UNLIMITED: Freshness = { freshUntil: Number.POSITIVE_INFINITY, shared: true };

/** A result made of parts is as fresh as its stalest part, and shareable only if every part is. */
export function mergedFreshness(parts: Freshness[]): Freshness {
  if (parts.length === 0) return STALE;
  let freshUntil = Number.POSITIVE_INFINITY;
  let shared = true;
  for (const part of parts) {
    freshUntil = Math.min(freshUntil, part.freshUntil);
    shared &&= part.shared;
  }
  return { freshUntil, shared };
}

/** The result's `ttlMs` and `cacheScope` as of `now`. */
export function cacheFields(
  { freshUntil, shared }: Freshness,
  now = Date.now(),
): { ttlMs: number; cacheScope: "public" | "private" } {
  // Unlimited only when no part limits it (no server offers the list): nothing says how long that holds.
  const ttlMs = Number.isFinite(freshUntil) ? Math.max(0, Math.floor(freshUntil - now)) : 0;
  return { ttlMs, cacheScope: shared ? "public" : "private" };
}

/** MCP 2026-07-28 caching hints (server/utilities/caching) as the gateway keeps and merges them. */
import { describe, expect, it } from "vitest";
import { cacheFields, freshnessOf, mergedFreshness, STALE, UNLIMITED } from "../../src/lib/freshness.ts";

describe("freshness", () => {
  it("reads a result's hints; one without them (a 2025 server's) is stale at once and private", () => {
    expect(freshnessOf({ ttlMs: 5_000, cacheScope: "public" }, 1_000)).toEqual({ freshUntil: 6_000, shared: true });
    expect(freshnessOf({}, 1_000)).toEqual({ freshUntil: 1_000, shared: false });
    expect(freshnessOf({ ttlMs: -1, cacheScope: "everyone" }, 1_000)).toEqual({ freshUntil: 1_000, shared: false });
    expect(freshnessOf({ ttlMs: 1.5 }, 1_000)).toEqual({ freshUntil: 1_000, shared: false });
  });

  it("merges parts into the stalest, shared only if every part is", () => {
    const long = { freshUntil: 60_000, shared: true };
    const short = { freshUntil: 20_000, shared: true };
    expect(mergedFreshness([long, short])).toEqual(short);
    expect(mergedFreshness([long, { freshUntil: 90_000, shared: false }])).toEqual({
      freshUntil: 60_000,
      shared: false,
    });
    expect(mergedFreshness([long, UNLIMITED])).toEqual(long);
    expect(mergedFreshness([])).toEqual(STALE);
  });

  it("counts the time to live down from when the result was read", () => {
    expect(cacheFields({ freshUntil: 20_000, shared: true }, 5_000)).toEqual({ ttlMs: 15_000, cacheScope: "public" });
    expect(cacheFields({ freshUntil: 20_000, shared: false }, 25_000)).toEqual({ ttlMs: 0, cacheScope: "private" });
    // Nothing limits a list no server offers, and nothing says how long that holds.
    expect(cacheFields(UNLIMITED, 5_000)).toEqual({ ttlMs: 0, cacheScope: "public" });
  });
});

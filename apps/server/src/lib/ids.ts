import { randomFillSync } from "node:crypto";
import { monotonicFactory } from "ulid";

// ulid's default source asks crypto for one byte per call (16 calls per id, 3 % of a gateway call's CPU); this one
// hands out the same cryptographic randomness from a buffer refilled 1,024 values at a time.
const randomValues = new Uint32Array(1024);
let nextRandom = randomValues.length;
function random(): number {
  if (nextRandom === randomValues.length) {
    randomFillSync(randomValues);
    nextRandom = 0;
  }
  return (randomValues[nextRandom++] ?? 0) / 2 ** 32;
}

const nextUlid = monotonicFactory(random);

/** A prefixed, time-sortable id such as `pgr_01jqz7m3c8v4r2k9x5n6t0w1ya`: ordering ids orders by creation. */
export function newId(prefix: string): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}

import { monotonicFactory } from "ulid";

const nextUlid = monotonicFactory();

/** A prefixed, time-sortable id such as `pgr_01jqz7m3c8v4r2k9x5n6t0w1ya`: ordering ids orders by creation. */
export function newId(prefix: string): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}

import { describe, expect, it } from "vitest";
import { Batcher } from "../../src/lib/batcher.ts";

/** A writer whose writes finish when the test says so, and which remembers what each write carried. */
function gatedWriter(failOn?: number) {
  const writes: number[][] = [];
  let open: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => (open = resolve));
  const write = async (items: number[]) => {
    writes.push(items);
    await gate;
    if (failOn !== undefined && items.includes(failOn)) throw new Error(`cannot write ${failOn}`);
    return items.map((item) => item * 10);
  };
  return {
    writes,
    release: () => {
      open();
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    batcher: new Batcher<number, number>(async (item) => (await write([item]))[0] as number, write),
  };
}

describe("Batcher (group commit)", () => {
  it("writes a lone item at once, and gathers the items that arrive meanwhile into one write", async () => {
    const { writes, release, batcher } = gatedWriter();
    const first = batcher.add(1);
    expect(writes).toEqual([[1]]);
    const rest = [2, 3, 4].map((item) => batcher.add(item));
    expect(writes).toEqual([[1]]);
    release();
    expect(await first).toBe(10);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[1], [2, 3, 4]]);
    release();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
  });

  it("writes a failed batch again item by item: only the bad item's caller fails", async () => {
    const { writes, release, batcher } = gatedWriter(3);
    const first = batcher.add(1);
    const rest = [2, 3, 4].map((item) => batcher.add(item).catch((error: Error) => error.message));
    release();
    await first;
    // The batch [2, 3, 4] fails, then each item is written alone.
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      release();
    }
    expect(await Promise.all(rest)).toEqual([20, "cannot write 3", 40]);
    expect(writes).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
  });
});

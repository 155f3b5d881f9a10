import { setImmediate as nextTask } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { beforeAll, describe, expect, it } from "vitest";
import { linkedAbortController, pruneCombinedSignals } from "../../src/lib/abort-signal-any.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** The runtime's set of signals combined with `signal` (an internal field), if it has one. */
function dependants(signal: AbortSignal): { size: number } | undefined {
  const key = Object.getOwnPropertySymbols(signal).find((symbol) => symbol.description === "kDependantSignals");
  return key ? ((signal as unknown as Record<symbol, { size: number }>)[key] ?? undefined) : undefined;
}

/** Combines `source` with `count` short-lived signals, each listened to and let go as an upstream request does. */
function combineMany(source: AbortSignal, count: number): void {
  for (let i = 0; i < count; i++) {
    const combined = AbortSignal.any([source, new AbortController().signal]);
    const onAbort = () => undefined;
    combined.addEventListener("abort", onAbort);
    combined.removeEventListener("abort", onAbort);
  }
}

describe("AbortSignal.any with a long-lived source (an upstream connection's signal)", () => {
  beforeAll(() => pruneCombinedSignals());

  it("forgets the signals combined with it once they are collected (Node 20 kept every one: nodejs/node#55351)", async () => {
    const connection = new AbortController().signal;
    combineMany(connection, 1);
    const probe = dependants(connection);
    if (!probe) return expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(22);
    combineMany(connection, 20_000);
    await nextTask();
    gc();
    await nextTask(); // where the runtime prunes in a FinalizationRegistry callback
    combineMany(connection, 1_024); // where it is pruned as signals are combined
    expect(dependants(connection)?.size).toBeLessThanOrEqual(2_048);
  });

  it("still aborts a combined signal with the reason of the first source to abort", () => {
    const connection = new AbortController();
    const request = new AbortController();
    const combined = AbortSignal.any([connection.signal, request.signal]);
    const heard: unknown[] = [];
    combined.addEventListener("abort", () => heard.push(combined.reason));
    request.abort(new Error("cancelled by the client"));
    connection.abort(new Error("connection closed"));
    expect(combined.aborted).toBe(true);
    expect(heard).toEqual([new Error("cancelled by the client")]);
  });

  it("combines an already aborted source into an aborted signal, and keeps working past the pruning interval", () => {
    const connection = new AbortController();
    combineMany(connection.signal, 3_000);
    const gone = AbortSignal.abort("gone");
    expect(AbortSignal.any([connection.signal, gone]).reason).toBe("gone");
    const combined = AbortSignal.any([connection.signal, new AbortController().signal]);
    connection.abort("closed");
    expect(combined.reason).toBe("closed");
  });
});

describe("linkedAbortController (one signal where AbortSignal.any would combine two)", () => {
  it("aborts with its parent's reason until unlinked, and on its own without touching the parent", () => {
    const parent = new AbortController();
    const linked = linkedAbortController(parent.signal);
    parent.abort(new Error("the client went away"));
    expect(linked.controller.signal.reason).toEqual(new Error("the client went away"));

    const other = new AbortController();
    const unlinked = linkedAbortController(other.signal);
    unlinked.unlink();
    other.abort();
    expect(unlinked.controller.signal.aborted).toBe(false);

    const untouched = new AbortController();
    const own = linkedAbortController(untouched.signal);
    own.controller.abort("timeout");
    expect(own.controller.signal.reason).toBe("timeout");
    expect(untouched.signal.aborted).toBe(false);
    expect(linkedAbortController(undefined).controller.signal.aborted).toBe(false);
  });

  it("starts aborted under a parent that already is, and leaves no listener behind once unlinked", () => {
    const done = new AbortController();
    done.abort("gone");
    expect(linkedAbortController(done.signal).controller.signal.reason).toBe("gone");
    const parent = new AbortController();
    const seen: string[] = [];
    parent.signal.addEventListener = ((type: string) => seen.push(`add ${type}`)) as never;
    parent.signal.removeEventListener = ((type: string) => seen.push(`remove ${type}`)) as never;
    linkedAbortController(parent.signal).unlink();
    expect(seen).toEqual(["add abort", "remove abort"]);
  });
});

/**
 * Node 20's `AbortSignal.any` never forgets a combined signal: each source keeps a WeakRef to every signal ever
 * combined with it, in a set that is never pruned (nodejs/node#55351, fixed from Node 22 with a
 * FinalizationRegistry). The MCP SDK's client transport combines its connection's signal with every request's, so
 * a busy upstream connection grew by one entry per call, without bound (measured: 22–100 bytes of heap per
 * tools/call that no GC reclaims).
 *
 * Where the runtime has that flaw, `AbortSignal.any` is wrapped: the native function still does all the work (its
 * semantics are untouched), and every PRUNE_EVERY calls the sources of that call drop the entries whose signal has
 * been collected. A source is pruned about as often as it is combined (a connection's signal takes part in each of
 * its requests), so its set stays near PRUNE_EVERY entries, at an amortised cost of one WeakRef check per call.
 * A counter per source would cost a WeakMap entry per call for every short-lived signal.
 */
const PRUNE_EVERY = 1_024;

let installed = false;

/** Wraps `AbortSignal.any` on runtimes whose sources keep collected signals forever (idempotent). */
export function pruneCombinedSignals(): void {
  if (installed) return;
  installed = true;
  const major = Number(process.versions.node.split(".")[0]);
  if (major >= 22) return;
  const dependants = dependantsOf();
  if (!dependants) return; // a Node 20 build without that internal set: nothing to prune
  const native = AbortSignal.any.bind(AbortSignal);
  let calls = 0;
  AbortSignal.any = (signals: AbortSignal[]): AbortSignal => {
    const signal = native(signals);
    if (++calls === PRUNE_EVERY) {
      calls = 0;
      for (const source of signals) prune(dependants(source));
    }
    return signal;
  };
}

/** Drops the entries whose signal was collected. */
function prune(refs: Set<WeakRef<AbortSignal>> | undefined): void {
  if (!refs) return;
  for (const ref of refs) if (ref.deref() === undefined) refs.delete(ref);
}

/** Reads a signal's set of combined signals (an internal field), or null where the runtime has none. */
function dependantsOf(): ((signal: AbortSignal) => Set<WeakRef<AbortSignal>> | undefined) | null {
  const probe = new AbortController().signal;
  AbortSignal.any([probe]);
  const key = Object.getOwnPropertySymbols(probe).find((symbol) => symbol.description === "kDependantSignals");
  if (!key) return null;
  return (signal) => {
    const value = (signal as unknown as Record<symbol, unknown>)[key];
    // Node's internal SafeSet is a Set that `instanceof Set` does not recognise.
    return typeof (value as Set<unknown> | undefined)?.delete === "function"
      ? (value as Set<WeakRef<AbortSignal>>)
      : undefined;
  };
}

/**
 * An AbortController that also aborts, with the same reason, when `parent` does, until `unlink` is called: what
 * `AbortSignal.any([parent, own])` gives where only one signal ever needs the other, at one signal instead of two.
 * Every tools/call made two such combinations, and on Node 20 each signal is made transferable when created
 * (`makeTransferable`): with AbortSignal.any the gateway's CPU profile at 16 calls in flight put 3.5–5 % of its
 * time in creating and combining signals.
 */
export function linkedAbortController(parent: AbortSignal | undefined): {
  controller: AbortController;
  unlink: () => void;
} {
  const controller = new AbortController();
  if (!parent) return { controller, unlink: () => undefined };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, unlink: () => undefined };
  }
  const follow = () => controller.abort(parent.reason);
  parent.addEventListener("abort", follow, { once: true });
  return { controller, unlink: () => parent.removeEventListener("abort", follow) };
}

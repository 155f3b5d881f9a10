// Summarises a V8 .cpuprofile (from --cpu-prof) into what dominates: self time by function, and inclusive time by
// package or source area (how much of the busy time has a frame of that package on the stack).
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time in which the process was not idle, in ms. */
  busyMs: number;
  /** Share of busy time spent in this area's own frames (adds up to 100%: the robust view across awaits). */
  selfByArea: { area: string; percent: number }[];
  /**
   * Share of busy time with at least one frame of this area on the stack (areas overlap). Code that runs after
   * an `await` is attributed to the microtask queue, not to its caller, so these are lower bounds.
   */
  inclusive: { area: string; percent: number }[];
  /** Share of busy time spent in the function itself. */
  self: { fn: string; area: string; percent: number }[];
  /** Inclusive share by source file of ours (apps/, packages/): which step of a request the time is under. */
  files: { file: string; percent: number }[];
}

/** A source file of ours (apps/…/src/…, packages/…/src/…), or undefined for anything else. */
const ourFile = (url: string) => /\/((?:apps|packages)\/[^/]+\/src\/.+)$/.exec(url)?.[1];

/** Where a frame comes from: a package name, a source area of ours, node core, or a V8 pseudo-frame. */
export function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  if (url.startsWith("wasm://")) return "wasm";
  if (url.startsWith("node:")) {
    const name = url.slice(5);
    return name.startsWith("internal/") ? `node:${name.split("/").slice(0, 2).join("/")}` : `node:${name}`;
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(url)?.[1];
  if (pkg) return pkg;
  const ours = /\/(apps\/[^/]+\/src\/[^/]+|packages\/[^/]+\/src\/[^/]+|bench\/src\/[^/]+)/.exec(url)?.[1];
  return ours ? ours.replace(/\.ts$/, "") : url;
}

/**
 * Puts the frames of a bundled file (the targets run the server's build, see targets.ts) back on the sources they
 * came from, through the source map the build writes beside each file: V8 reports positions in the bundle.
 */
function unbundle(profile: CpuProfile): void {
  const maps = new Map<string, { map: SourceMap; dir: string } | null>();
  const mapOf = (url: string) => {
    if (!maps.has(url)) {
      const path = url.startsWith("file:") ? fileURLToPath(url) : "";
      maps.set(
        url,
        path && existsSync(`${path}.map`)
          ? { map: new SourceMap(JSON.parse(readFileSync(`${path}.map`, "utf8"))), dir: dirname(path) }
          : null,
      );
    }
    return maps.get(url);
  };
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    const found = frame.url ? mapOf(frame.url) : null;
    if (!found) continue;
    const entry = found.map.findEntry(frame.lineNumber, frame.columnNumber) as {
      originalSource?: string;
      originalLine?: number;
    };
    if (!entry.originalSource) continue;
    const source = entry.originalSource.startsWith("file:")
      ? entry.originalSource
      : pathToFileURL(resolve(found.dir, entry.originalSource)).href;
    node.callFrame = { ...frame, url: source, lineNumber: entry.originalLine ?? frame.lineNumber };
  }
}

export function summariseProfile(file: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  unbundle(profile);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  // Time per node from the sample deltas (more exact than hit counts when sampling intervals vary).
  const selfTime = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    const delta = profile.timeDeltas[i + 1] ?? 0;
    if (id !== undefined) selfTime.set(id, (selfTime.get(id) ?? 0) + delta);
  }

  /** The set of keys (areas, files) of the frames on a node's stack, memoised per node. */
  const onStack = (key: (frame: ProfileNode["callFrame"]) => string | undefined) => {
    const memo = new Map<number, Set<string>>();
    const of = (id: number): Set<string> => {
      const known = memo.get(id);
      if (known) return known;
      const node = byId.get(id);
      const up = parent.get(id);
      const set = new Set(up === undefined ? [] : of(up));
      const k = node && node.callFrame.functionName !== "(root)" ? key(node.callFrame) : undefined;
      if (k) set.add(k);
      memo.set(id, set);
      return set;
    };
    return of;
  };
  const stackAreas = onStack((frame) => areaOf(frame.url, frame.functionName));
  const stackFiles = onStack((frame) => ourFile(frame.url));

  let busy = 0;
  const inclusive = new Map<string, number>();
  const files = new Map<string, number>();
  const self = new Map<string, { area: string; us: number }>();
  const selfByArea = new Map<string, number>();
  for (const [id, us] of selfTime) {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === "(idle)") continue;
    busy += us;
    for (const area of stackAreas(id)) inclusive.set(area, (inclusive.get(area) ?? 0) + us);
    for (const file of stackFiles(id)) files.set(file, (files.get(file) ?? 0) + us);
    const { functionName, url, lineNumber } = node.callFrame;
    const area = areaOf(url, functionName);
    selfByArea.set(area, (selfByArea.get(area) ?? 0) + us);
    const key =
      `${functionName || "(anonymous)"} ${url ? `${url.split("/").slice(-1)[0]}:${lineNumber + 1}` : ""}`.trim();
    const entry = self.get(key) ?? { area, us: 0 };
    entry.us += us;
    self.set(key, entry);
  }
  const pct = (us: number) => Math.round((1000 * us) / (busy || 1)) / 10;
  return {
    busyMs: Math.round(busy / 1000),
    selfByArea: [...selfByArea]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, us]) => ({ area, percent: pct(us) })),
    inclusive: [...inclusive]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, us]) => ({ area, percent: pct(us) })),
    self: [...self]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, top)
      .map(([fn, { area, us }]) => ({ fn, area, percent: pct(us) })),
    files: [...files]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([file, us]) => ({ file, percent: pct(us) })),
  };
}

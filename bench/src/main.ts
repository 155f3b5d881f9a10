// `pnpm bench`: every figure of issue 7 measured in one run on 127.0.0.1, printed as a table of ratios against
// the targets and written to bench/results/<timestamp>.json. Run through scripts/with-postgres.mjs, which sets
// TEST_DATABASE_URL to a throwaway PostgreSQL server for the PostgreSQL figures.
//   --quick          short windows, a 100k-row seed, 100 MCP sessions (to try the harness, not to report)
//   --only=1,3,7     only these figures (1, 2 and 3 share their servers)
//   --markdown       also replace the table between the markers in BENCHMARKS.md
//   --log-level=L    the full-stack targets' LOG_LEVEL (default info, as `pnpm start`; to see what logging costs)
//   --profile        instead of the figures: CPU-profile the full-stack targets under the GET and POST loads,
//                    the gateway under figure 4's calls and one server restart (its whole life, idle excluded),
//                    and print what dominates (results/<timestamp>-profile.json); --only=1,2,4,7 narrows it
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem, type } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { compareCallLatency, compareCallThroughput, type OpenCaller } from "./calls.ts";
import { type CommandRun, measureDevLoop } from "./devloop.ts";
import { compareLatency, compareThroughput, type Request, type Throughput } from "./load.ts";
import {
  checkClient,
  concurrentSessions,
  createSession,
  sessionClients,
  sseClient,
  startForwarder,
  startModernUpstream,
  startPeer,
  startUpstream,
  streamableClient,
  type Upstream,
  writeUpstreamCatalog,
} from "./mcp.ts";
import { summariseProfile } from "./profile.ts";
import type { Seeded } from "./protocol.ts";
import {
  type BenchResult,
  check,
  consoleTable,
  type FigureResult,
  fmt,
  type Machine,
  markdownTable,
} from "./report.ts";
import { buildServer, cpuMs, measureRestart } from "./restart.ts";
import { Target } from "./targets.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const RESULTS = fileURLToPath(new URL("../results/", import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const profileMode = args.includes("--profile");
const only = args
  .find((a) => a.startsWith("--only="))
  ?.slice(7)
  .split(",")
  .map(Number);
const wants = (figure: number) => !only || only.includes(figure);
const logLevel = args.find((a) => a.startsWith("--log-level="))?.slice(12) ?? "info";

const settings = {
  connections: 10,
  warmupSeconds: quick ? 1 : 2,
  /** Measured seconds per target and figure (after the warm-up), in `slices` alternating slices. */
  seconds: quick ? 4 : 8,
  slices: 4,
  seedRows: quick ? 100_000 : 1_000_000,
  latency: quick ? { rounds: 2, perRound: 50, warmup: 20 } : { rounds: 10, perRound: 100, warmup: 50 },
  sessions: quick ? 100 : 1000,
  /** Figure 4's closed-loop MCP clients per leg (the issue's concurrency 16). */
  mcpConnections: 16,
  restarts: 3,
  idleSecondsBeforeRss: 3,
};

const started = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);

// ── machine ──────────────────────────────────────────────────────────────────────────────────────────────────
async function postgresVersion(url: string | undefined): Promise<string | null> {
  if (!url) return null;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>("show server_version");
    return rows[0]?.server_version ?? null;
  } finally {
    await client.end();
  }
}

async function machine(): Promise<Machine> {
  const pglite = JSON.parse(
    readFileSync(join(ROOT, "bench/node_modules/@electric-sql/pglite/package.json"), "utf8"),
  ) as { version: string };
  return {
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    os: `${type()} ${release()}`,
    postgres: await postgresVersion(process.env.TEST_DATABASE_URL),
    pglite: pglite.version,
    loadAverageAtStart: loadavg(),
  };
}

// ── the HTTP figures (1, 2, 3) ───────────────────────────────────────────────────────────────────────────────
interface Stack {
  label: "PGlite" | "PostgreSQL";
  target: Target;
  auth: Record<string, string>;
  deploymentId: string;
  createBody: string;
}

async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A deployment to read, created through the API itself (which also checks the stack answers as it should). */
async function prepareStack(
  label: Stack["label"],
  target: Target,
  providerId = target.ready.providerId,
): Promise<{ stack: Stack; payload: unknown }> {
  const auth = { authorization: `Bearer ${target.ready.apiKey}` };
  const createBody = JSON.stringify({ name: "bench deployment", provider_id: providerId });
  const created = await fetch(`${target.url}/provider-deployments`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: createBody,
  });
  if (created.status !== 201) throw new Error(`${label}: create answered ${created.status}: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const read = await fetch(`${target.url}/provider-deployments/${id}`, { headers: auth });
  if (read.status !== 200) throw new Error(`${label}: read answered ${read.status}`);
  return { stack: { label, target, auth, deploymentId: id, createBody }, payload: await read.json() };
}

const validity = (t: Throughput) =>
  t.non2xx + t.errors + t.timeouts === 0
    ? undefined
    : `${t.non2xx} non-2xx, ${t.errors} errors, ${t.timeouts} timeouts`;

function ratioFigure(
  id: string,
  title: string,
  full: Throughput,
  bare: Throughput,
  target: number,
  data: unknown,
): FigureResult {
  const ratio = full.rps / bare.rps;
  const problem = validity(full) ?? validity(bare);
  return {
    id,
    title,
    measured: `${fmt.int(full.rps)} vs ${fmt.int(bare.rps)} req/s (p50 ${fmt.ms(full.p50Ms)} vs ${fmt.ms(bare.p50Ms)})`,
    value: ratio,
    display: fmt.ratio(ratio),
    target: `≥ ${target}×`,
    status: problem ? "invalid" : check(ratio, ">=", target),
    ...(problem ? { note: problem } : {}),
    data,
  };
}

async function deepPage(stack: Stack, rows: number): Promise<FigureResult> {
  const id = `3 ${stack.label}`;
  const title = `GET /provider-deployments?limit=20 after ${fmt.int(rows)} rows vs first page (p50)`;
  log(`${stack.label}: seeding ${fmt.int(rows)} deployments…`);
  const seeded: Seeded = await stack.target.seed(rows);
  log(`${stack.label}: seeded in ${fmt.s(seeded.ms / 1000)}; measuring page latency`);
  const list = `${stack.target.url}/provider-deployments?limit=20`;
  const pages: Record<string, Request> = {
    first: { url: list, headers: stack.auth },
    deep: { url: `${list}&after=${seeded.deepId}`, headers: stack.auth },
    shallow: { url: `${list}&after=${seeded.shallowId}`, headers: stack.auth },
  };
  for (const [name, page] of Object.entries(pages)) {
    const body = (await (await fetch(page.url, { headers: stack.auth })).json()) as { items?: unknown[] };
    if (body.items?.length !== 20) throw new Error(`${stack.label}: the ${name} page has ${body.items?.length} items`);
  }
  const latency = await compareLatency(pages, settings.latency);
  const first = latency.first;
  const deep = latency.deep;
  const shallow = latency.shallow;
  if (!first || !deep || !shallow) throw new Error("missing latency samples");
  const ratio = deep.p50Ms / first.p50Ms;
  const failures = first.failures + deep.failures + shallow.failures;
  return {
    id,
    title,
    measured: `${fmt.ms(deep.p50Ms)} vs ${fmt.ms(first.p50Ms)} (after row 20: ${fmt.ms(shallow.p50Ms)})`,
    value: ratio,
    display: fmt.ratio(ratio),
    target: "≤ 1.2×",
    status: failures ? "invalid" : check(ratio, "<=", 1.2),
    ...(failures ? { note: `${failures} failed requests` } : {}),
    data: { seeded, latency },
  };
}

async function httpFigures(figures: FigureResult[], profileDir: string | undefined) {
  const scratch = mkdtempSync(join(tmpdir(), "toolplane-bench-"));
  const targets: Target[] = [];
  const started = async (options: Parameters<typeof Target.start>[0]) => {
    const target = await Target.start(options);
    targets.push(target);
    return target;
  };
  try {
    log("starting the full stack on PGlite (a fresh data directory)…");
    const stacks: Stack[] = [];
    const pglite = await prepareStack(
      "PGlite",
      await started({ mode: "full", dataDir: join(scratch, "pglite"), logLevel }),
    );
    stacks.push(pglite.stack);
    const adminUrl = process.env.TEST_DATABASE_URL;
    if (adminUrl) {
      log("starting the full stack on PostgreSQL (a fresh database)…");
      const databaseUrl = await createDatabase(adminUrl, "toolplane_bench");
      stacks.push((await prepareStack("PostgreSQL", await started({ mode: "full", databaseUrl, logLevel }))).stack);
    }
    const bare = await started({ mode: "bare", payload: pglite.payload });
    const bytes = JSON.stringify(pglite.payload).length;
    log(`the deployment body is ${bytes} bytes; the bare route answers the same body`);
    // Idle RSS of each target before any load: what the embedded database and the app each add to bare Express.
    const idleRssMb: Record<string, number> = { bare: Math.round(bare.rssMb()) };
    for (const stack of stacks) idleRssMb[stack.label] = Math.round(stack.target.rssMb());
    log(`idle RSS (MB): ${JSON.stringify(idleRssMb)}`);

    const load = {
      connections: settings.connections,
      warmupSeconds: settings.warmupSeconds,
      // One window per target under the profiler (one profile each); alternating slices otherwise.
      slices: profileDir ? 1 : settings.slices,
      sliceSeconds: profileDir ? settings.seconds : settings.seconds / settings.slices,
    };
    const windowOf = (target: Target, file: string) =>
      profileDir
        ? { before: () => target.profileStart(), after: () => target.profileStop(join(profileDir, file)) }
        : undefined;
    const compare = async (figure: number, method: "GET" | "POST", target: number) => {
      const path = (stack: Stack) =>
        method === "GET" ? `/provider-deployments/${stack.deploymentId}` : "/provider-deployments";
      const body = (stack: Stack) => (method === "POST" ? { method, body: stack.createBody } : {});
      const requests: Record<string, Parameters<typeof compareThroughput>[0][string]> = {
        bare: {
          url: `${bare.url}${path(pglite.stack)}`,
          ...body(pglite.stack),
          window: windowOf(bare, `${method} bare.cpuprofile`),
        },
      };
      for (const stack of stacks) {
        requests[stack.label] = {
          url: `${stack.target.url}${path(stack)}`,
          headers: stack.auth,
          ...body(stack),
          window: windowOf(stack.target, `${method} ${stack.label}.cpuprofile`),
        };
      }
      log(
        `figure ${figure}: ${method} ${path(pglite.stack).replace(pglite.stack.deploymentId, ":id")}, ` +
          `${load.connections} connections, ${load.slices} × ${load.sliceSeconds} s per target in turns`,
      );
      const results = await compareThroughput(requests, load);
      for (const [name, r] of Object.entries(results)) {
        log(`  ${name}: ${fmt.int(r.rps)} req/s, p50 ${fmt.ms(r.p50Ms)}, p99 ${fmt.ms(r.p99Ms)}`);
      }
      const bareResult = results.bare;
      if (!bareResult) throw new Error("no bare result");
      for (const stack of stacks) {
        const full = results[stack.label];
        if (!full) continue;
        const what =
          method === "GET" ? "GET /provider-deployments/:id (authenticated)" : "POST /provider-deployments (create)";
        figures.push(
          ratioFigure(
            `${figure} ${stack.label}`,
            `${what}: full stack vs bare Express, req/s`,
            full,
            bareResult,
            target,
            {
              full,
              bare: bareResult,
              responseBytes: bytes,
              idleRssMb,
            },
          ),
        );
      }
    };
    if (wants(1)) await compare(1, "GET", 0.5);
    if (wants(2)) await compare(2, "POST", 0.3);
    if (wants(3) && !profileDir) {
      for (const stack of stacks) figures.push(await deepPage(stack, settings.seedRows));
    }
    if (!adminUrl) {
      for (const figure of [1, 2, 3].filter(wants)) {
        figures.push(notMeasured(`${figure} PostgreSQL`, "no PostgreSQL: run through `pnpm bench` (with-postgres)"));
      }
    }
  } finally {
    await Promise.all(targets.map((t) => t.stop().catch(() => t.kill())));
    rmSync(scratch, { recursive: true, force: true });
  }
}

function notMeasured(id: string, why: string, title = ""): FigureResult {
  return { id, title, measured: why, value: null, display: "—", target: "—", status: "not measured" };
}

/**
 * Runs one group of figures; when it fails (a target that does not start, a command that crashes), its figures
 * are reported invalid with the reason and the run goes on to the next group.
 */
async function guarded(figures: FigureResult[], ids: string[], measure: () => Promise<void>): Promise<void> {
  try {
    await measure();
  } catch (err) {
    const reason = (err instanceof Error ? err.message : String(err)).split("\n").slice(0, 3).join(" ");
    log(`figures ${ids.join(", ")} failed: ${reason}`);
    for (const id of ids) {
      if (figures.some((f) => f.id.split(" ")[0] === id)) continue;
      figures.push({
        id,
        title: "",
        measured: "—",
        value: null,
        display: "—",
        target: "—",
        status: "invalid",
        note: reason,
      });
    }
  }
}

/** A figure whose subject is not built yet: no harness runs for it until it is. */
function pending(id: string, title: string, target: string, note: string): FigureResult {
  return { id, title, measured: "—", value: null, display: "—", target, status: "pending", note };
}

// ── the MCP gateway figures (4, 5) ──────────────────────────────────────────────────────────────────────────
const MCP_FIGURES = {
  4: {
    title: "MCP tools/call through a session's connection_url vs direct to the upstream (added p50 / p99)",
    target: "≤ +1 ms / ≤ +5 ms",
  },
  5: {
    title: `${fmt.int(settings.sessions)} concurrent MCP sessions on one process, each listing and calling tools`,
    target: "0 errors",
  },
} as const;

/**
 * Figure 4's rows: which client (a key of the measured legs) against which direct baseline. The baseline speaks
 * the version the caller's upstream leg speaks: the gateway's upstream client negotiates 2025-11-25 with
 * server-everything and 2026-07-28 with the modern server; mcp-hub negotiates 2025-06-18.
 */
const LATENCY_ROWS = [
  {
    id: "4a",
    leg: "2025 → 2025",
    base: "direct 2025-11-25",
    what: "a 2025-11-25 client (initialize, Mcp-Session-Id) → a 2025 upstream (server-everything)",
  },
  {
    id: "4b",
    leg: "2026 → 2026",
    base: "direct 2026-07-28",
    what: "a 2026-07-28 client (stateless: _meta, Mcp-Method / Mcp-Name) → a 2026-07-28 upstream (SDK v2)",
  },
  { id: "4c", leg: "2025 → 2026", base: "direct 2026-07-28", what: "a 2025-11-25 client → a 2026-07-28 upstream" },
  { id: "4d", leg: "2026 → 2025", base: "direct 2025-11-25", what: "a 2026-07-28 client → a 2025 upstream" },
] as const;
const THROUGHPUT_ROWS = [
  { id: "4f", leg: "2025 → 2025", base: "direct 2025-11-25", what: "a 2025-11-25 client → a 2025 upstream" },
  { id: "4g", leg: "2026 → 2026", base: "direct 2026-07-28", what: "a 2026-07-28 client → a 2026-07-28 upstream" },
] as const;
const PEER = {
  leg: "mcp-hub",
  base: "direct 2025-06-18",
  what: "mcp-hub 4.2.1 (its HTTP+SSE /mcp, a 2025-06-18 client) → server-everything",
};

/**
 * Figure 4's floor (4j, 4k): a byte-forwarding process (forwarder.ts: no parsing, no session, no database) between
 * the client and each upstream, compared with the same direct baseline as the gateway's legs. What it adds is what
 * any process in between costs on this machine (one more loopback hop each way, one more process to wake), the
 * part of the gateway's figures that no gateway could save.
 */
const FLOOR = [
  { id: "2025", leg: "forwarder 2025", base: "direct 2025-11-25", what: "a 2025-11-25 client → server-everything" },
  { id: "2026-07-28", leg: "forwarder 2026", base: "direct 2026-07-28", what: "a 2026-07-28 client → SDK v2" },
] as const;

/** One row for both eras of the floor, from a figure made per era. */
function floorFigure(id: string, load: string, measure: (row: (typeof FLOOR)[number]) => FigureResult): FigureResult {
  const [older, modern] = FLOOR.map(measure) as [FigureResult, FigureResult];
  const problem = older.note ?? modern.note;
  return {
    id,
    title: `tools/call, ${load}: a process that only forwards bytes (no parsing, no database) vs direct, ${FLOOR.map((row) => row.what).join("; ")}`,
    measured: `${FLOOR[0].id}: ${older.measured}; ${FLOOR[1].id}: ${modern.measured}`,
    value: older.value,
    display: `${older.display} (2025); ${modern.display} (2026-07-28)`,
    target: "— (what any process in between costs here)",
    status: problem ? "invalid" : "reference",
    ...(problem ? { note: problem } : {}),
    data: { [FLOOR[0].id]: older.data, [FLOOR[1].id]: modern.data },
  };
}

type Latency = Awaited<ReturnType<typeof compareCallLatency>>[string];
type CallRate = Awaited<ReturnType<typeof compareCallThroughput>>[string];

/** Added p50 / p99 of `via` over `direct`; invalid when any call failed. */
function addedLatency(id: string, what: string, via: Latency, direct: Latency, extra: Partial<FigureResult> = {}) {
  const p50 = via.p50Ms - direct.p50Ms;
  const p99 = via.p99Ms - direct.p99Ms;
  const problem = via.problem ?? direct.problem;
  const figure: FigureResult = {
    id,
    title: `tools/call, 1 in flight: ${what} vs direct (added p50 / p99)`,
    measured: `p50 ${fmt.ms(via.p50Ms)} vs ${fmt.ms(direct.p50Ms)}, p99 ${fmt.ms(via.p99Ms)} vs ${fmt.ms(direct.p99Ms)}`,
    value: p50,
    display: `${fmt.addedMs(p50)} / ${fmt.addedMs(p99)}`,
    target: MCP_FIGURES[4].target,
    status: p50 <= 1 && p99 <= 5 ? "pass" : "miss",
    data: { via, direct },
    ...extra,
  };
  return problem
    ? { ...figure, status: "invalid" as const, note: `${via.failures + direct.failures} failed calls: ${problem}` }
    : figure;
}

/** Calls per second of `via` over `direct` at 16 in flight; invalid when any call failed. */
function throughputRatio(id: string, what: string, via: CallRate, direct: CallRate, extra: Partial<FigureResult> = {}) {
  const ratio = via.rps / direct.rps;
  const problem = via.problem ?? direct.problem;
  const figure: FigureResult = {
    id,
    title: `tools/call, ${settings.mcpConnections} clients in a closed loop: ${what} vs direct, calls/s`,
    measured: `${fmt.int(via.rps)} vs ${fmt.int(direct.rps)} calls/s (p50 ${fmt.ms(via.p50Ms)} vs ${fmt.ms(direct.p50Ms)})`,
    value: ratio,
    display: fmt.ratio(ratio),
    target: "≥ 0.5×",
    status: check(ratio, ">=", 0.5),
    data: { via, direct },
    ...extra,
  };
  return problem
    ? { ...figure, status: "invalid" as const, note: `${via.failures + direct.failures} failed calls: ${problem}` }
    : figure;
}

/**
 * With `profileDir`, the server is CPU-profiled over figure 4's calls through the gateway at concurrency 1 (both
 * client eras over both upstreams, in turns), and nothing else runs.
 */
async function mcpFigures(figures: FigureResult[], profileDir?: string) {
  const scratch = mkdtempSync(join(tmpdir(), "toolplane-bench-mcp-"));
  const closers: (() => Promise<void>)[] = [];
  let target: Target | undefined;
  try {
    const [everything, modern] = await Promise.all([startUpstream(ROOT), startModernUpstream()]);
    closers.push(everything.close, modern.close);
    for (const upstream of [everything, modern]) writeUpstreamCatalog(scratch, upstream);
    const adminUrl = process.env.TEST_DATABASE_URL;
    const database = adminUrl ? "PostgreSQL" : "PGlite";
    log(`figures 4 and 5: the full stack on ${database}; upstreams server-everything (2025) and SDK v2 (2026-07-28)…`);
    target = await Target.start({
      mode: "full",
      logLevel,
      catalogDir: scratch,
      ...(adminUrl
        ? { databaseUrl: await createDatabase(adminUrl, "toolplane_bench_mcp") }
        : { dataDir: join(scratch, "pglite") }),
    });
    log(`  gateway server pid ${target.ready.pid}`);
    const deploy = async (upstream: Upstream) => {
      const providerId = target?.ready.providers[upstream.slug];
      if (!target || !providerId) throw new Error(`the catalog has no ${upstream.slug} provider`);
      return (await prepareStack(database, target, providerId)).stack.deploymentId;
    };
    const deployments = { everything: await deploy(everything), modern: await deploy(modern) };
    let via: {
      everything: Awaited<ReturnType<typeof sessionClients>>;
      modern: Awaited<ReturnType<typeof sessionClients>>;
    };
    try {
      via = {
        everything: await sessionClients(await createSession(target, deployments.everything), everything),
        modern: await sessionClients(await createSession(target, deployments.modern), modern),
      };
    } catch (err) {
      // The gateway is not there (or not answering yet): the figures wait for it.
      const why = (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";
      for (const id of [4, 5] as const) {
        if (wants(id)) {
          const { title, target } = MCP_FIGURES[id];
          figures.push(pending(String(id), title, target, `needs the MCP gateway (issue 5): ${why}`));
        }
      }
      return;
    }
    if (wants(4)) {
      const gateway = {
        "2025 → 2025": via.everything["2025-11-25"],
        "2026 → 2026": via.modern["2026-07-28"],
        "2025 → 2026": via.modern["2025-11-25"],
        "2026 → 2025": via.everything["2026-07-28"],
      };
      if (profileDir) {
        log(
          `figure 4 under the profiler: the gateway's 4 client/upstream pairs, ${settings.latency.rounds} × ${settings.latency.perRound} calls each in turns`,
        );
        await target.profileStart();
        await compareCallLatency(gateway, settings.latency);
        await target.profileStop(join(profileDir, "tools-call gateway.cpuprofile"));
      } else {
        log("  starting mcp-hub over server-everything…");
        const peer = await startPeer(ROOT, everything, scratch);
        closers.push(peer.close);
        const peerClient = sseClient(peer.url, peer.tool, everything);
        const direct = {
          "direct 2025-11-25": streamableClient(everything.url, {}, "2025-11-25", everything),
          "direct 2026-07-28": streamableClient(modern.url, {}, "2026-07-28", modern),
          "direct 2025-06-18": streamableClient(everything.url, {}, "2025-06-18", everything),
        };
        const forwarders = await Promise.all([startForwarder(everything), startForwarder(modern)]);
        for (const forwarder of forwarders) closers.push(forwarder.close);
        const floor = {
          [FLOOR[0].leg]: streamableClient(forwarders[0].url, {}, "2025-11-25", everything),
          [FLOOR[1].leg]: streamableClient(forwarders[1].url, {}, "2026-07-28", modern),
        };
        await Promise.all([peerClient, ...Object.values(direct), ...Object.values(floor)].map(checkClient));
        const legs: Record<string, OpenCaller> = { ...direct, ...gateway, [PEER.leg]: peerClient, ...floor };
        log(
          `figure 4: tools/call, ${Object.keys(legs).length} clients, ${settings.latency.rounds} × ${settings.latency.perRound} calls each in turns`,
        );
        // The CPU time each gateway process spends per call, read around the comparison (the gateway serves only
        // its four legs meanwhile, the peer only its one): unlike latency, hardly moved by other load on the machine.
        const cpuBefore = { ours: cpuMs(target.ready.pid), peer: cpuMs(peer.pid) };
        const latency = await compareCallLatency(legs, settings.latency);
        const callsPerLeg = settings.latency.warmup + settings.latency.rounds * settings.latency.perRound;
        const cpuPerCall = {
          ours: (cpuMs(target.ready.pid) - cpuBefore.ours) / (Object.keys(gateway).length * callsPerLeg),
          peer: (cpuMs(peer.pid) - cpuBefore.peer) / callsPerLeg,
        };
        log(`  CPU per call: our gateway ${fmt.ms(cpuPerCall.ours)}, mcp-hub ${fmt.ms(cpuPerCall.peer)}`);
        for (const [name, l] of Object.entries(latency)) {
          log(`  ${name}: p50 ${fmt.ms(l.p50Ms)}, p99 ${fmt.ms(l.p99Ms)}${l.failures ? `, ${l.failures} failed` : ""}`);
        }
        const of = (name: string) => {
          const l = latency[name];
          if (!l) throw new Error(`no latency samples for ${name}`);
          return l;
        };
        const ours = addedLatency(`4a ${database}`, LATENCY_ROWS[0].what, of("2025 → 2025"), of("direct 2025-11-25"));
        for (const row of LATENCY_ROWS) {
          figures.push(
            row.id === "4a" ? ours : addedLatency(`${row.id} ${database}`, row.what, of(row.leg), of(row.base)),
          );
        }
        const peerLatency = addedLatency("4e mcp-hub", PEER.what, of(PEER.leg), of(PEER.base));
        const oursP99 = of("2025 → 2025").p99Ms - of("direct 2025-11-25").p99Ms;
        const peerP99 = of(PEER.leg).p99Ms - of(PEER.base).p99Ms;
        figures.push({
          ...peerLatency,
          target: "4a adds less",
          ...(peerLatency.status === "invalid"
            ? {}
            : { status: (ours.value ?? Infinity) < (peerLatency.value ?? 0) && oursP99 < peerP99 ? "pass" : "miss" }),
        });

        figures.push(
          floorFigure("4j floor", "1 in flight", (row) => addedLatency(row.id, row.what, of(row.leg), of(row.base))),
        );

        figures.push({
          id: `4i ${database}`,
          title:
            "CPU time of the gateway process per tools/call, 1 in flight: ours (the four pairs of 4a–4d) vs mcp-hub (4e)",
          measured: `${fmt.ms(cpuPerCall.ours)} vs ${fmt.ms(cpuPerCall.peer)} per call`,
          value: cpuPerCall.ours / cpuPerCall.peer,
          display: fmt.ratio(cpuPerCall.ours / cpuPerCall.peer),
          target: "≤ 1× (no more than the peer)",
          status: check(cpuPerCall.ours / cpuPerCall.peer, "<=", 1),
          data: cpuPerCall,
        });

        const load = {
          connections: settings.mcpConnections,
          warmupSeconds: settings.warmupSeconds,
          slices: settings.slices,
          sliceSeconds: settings.seconds / settings.slices,
        };
        const rateLegs = [
          "direct 2025-11-25",
          "direct 2026-07-28",
          "direct 2025-06-18",
          "2025 → 2025",
          "2026 → 2026",
          PEER.leg,
          ...FLOOR.map((row) => row.leg),
        ];
        log(`figure 4: ${load.connections} clients each, ${load.slices} × ${load.sliceSeconds} s per leg in turns`);
        const rates = await compareCallThroughput(
          Object.fromEntries(rateLegs.map((name) => [name, legs[name] as OpenCaller])),
          load,
        );
        for (const [name, r] of Object.entries(rates)) {
          log(
            `  ${name}: ${fmt.int(r.rps)} calls/s, p50 ${fmt.ms(r.p50Ms)}, p99 ${fmt.ms(r.p99Ms)}${r.failures ? `, ${r.failures} failed` : ""}`,
          );
        }
        const rate = (name: string) => {
          const r = rates[name];
          if (!r) throw new Error(`no throughput for ${name}`);
          return r;
        };
        const oursRate = throughputRatio(
          `4f ${database}`,
          THROUGHPUT_ROWS[0].what,
          rate("2025 → 2025"),
          rate("direct 2025-11-25"),
        );
        figures.push(oursRate);
        const [, modernRow] = THROUGHPUT_ROWS;
        figures.push(
          throughputRatio(`${modernRow.id} ${database}`, modernRow.what, rate(modernRow.leg), rate(modernRow.base)),
        );
        const peerRate = throughputRatio("4h mcp-hub", PEER.what, rate(PEER.leg), rate(PEER.base));
        figures.push({
          ...peerRate,
          target: "4f does more",
          ...(peerRate.status === "invalid"
            ? {}
            : { status: (oursRate.value ?? 0) > (peerRate.value ?? Infinity) ? "pass" : "miss" }),
        });
        figures.push(
          floorFigure(`4k floor`, `${settings.mcpConnections} in flight`, (row) =>
            throughputRatio(row.id, row.what, rate(row.leg), rate(row.base)),
          ),
        );
      }
    }
    if (wants(5) && !profileDir) {
      log(`figure 5: ${fmt.int(settings.sessions)} sessions, then one MCP client on each, all at once…`);
      const run = await concurrentSessions(target, deployments.everything, everything, settings.sessions);
      log(
        `  ${run.errors} errors; RSS ${run.rssBeforeMb.toFixed(0)} → peak ${run.rssPeakMb.toFixed(0)} MB in ${fmt.s(run.runSeconds)}`,
      );
      const problems = Object.entries(run.problems).map(([p, n]) => `${n}× ${p}`);
      figures.push({
        id: `5 ${database}`,
        ...MCP_FIGURES[5],
        measured: `${run.errors} errors in ${fmt.s(run.runSeconds)}; RSS ${run.rssBeforeMb.toFixed(0)} → ${run.rssPeakMb.toFixed(0)} MB peak, ${run.kbPerSession.toFixed(0)} KB per session`,
        value: run.errors,
        display: `${run.errors} errors, ${run.kbPerSession.toFixed(0)} KB/session`,
        status: check(run.errors, "<=", 0),
        ...(problems.length ? { note: problems.slice(0, 3).join("; ") } : {}),
        data: run,
      });
    }
  } finally {
    await target?.stop().catch(() => target?.kill());
    await Promise.all(closers.map((close) => close()));
    rmSync(scratch, { recursive: true, force: true });
  }
}

// ── figure 6: the developer loop ─────────────────────────────────────────────────────────────────────────────
async function devLoopFigures(figures: FigureResult[]) {
  log("figure 6: developer loop in a temporary clone of HEAD…");
  const loop = await measureDevLoop(ROOT, log);
  const failed = (r: CommandRun) => (r.timedOut ? "timed out" : r.exitCode !== 0 ? `exit ${r.exitCode}` : undefined);
  const reason = (r: CommandRun) =>
    (r.errors.length ? r.errors : r.tail.split("\n").slice(-3)).join("; ").replace(/\s+/g, " ");

  const editSeconds = loop.editGenerate.seconds + loop.editTypecheck.seconds;
  const editRun = failed(loop.editGenerate) ? loop.editGenerate : loop.editTypecheck;
  const editProblem = failed(editRun);
  figures.push({
    id: "6 edit loop",
    title: "one-line spec edit → pnpm generate → pnpm typecheck",
    measured: `${fmt.s(loop.editGenerate.seconds)} + ${fmt.s(loop.editTypecheck.seconds)} (CPU ${fmt.s(loop.editGenerate.cpuSeconds)} + ${fmt.s(loop.editTypecheck.cpuSeconds)})`,
    value: editSeconds,
    display: fmt.s(editSeconds),
    target: "≤ 10 s",
    status: editProblem ? "invalid" : check(editSeconds, "<=", 10),
    ...(editProblem
      ? { note: `the loop failed at ${loop.commit.slice(0, 7)} (${editProblem}): ${reason(editRun)}` }
      : {}),
    data: { commit: loop.commit, generate: loop.editGenerate, typecheck: loop.editTypecheck },
  });

  const noop = [...loop.noop].sort((a, b) => a.seconds - b.seconds);
  const median = noop[Math.floor(noop.length / 2)];
  const noopFailure = loop.noop.find(failed);
  const noopProblem = noopFailure && `${failed(noopFailure)}: ${reason(noopFailure)}`;
  figures.push({
    id: "6 no-op generate",
    title: "pnpm generate with nothing changed (median of 3)",
    measured: `${loop.noop.map((r) => fmt.s(r.seconds)).join(", ")} (CPU ${loop.noop.map((r) => fmt.s(r.cpuSeconds)).join(", ")})`,
    value: median?.seconds ?? null,
    display: median ? fmt.s(median.seconds) : "—",
    target: "≤ 1 s",
    status: noopProblem || !median ? "invalid" : check(median.seconds, "<=", 1),
    ...(noopProblem ? { note: noopProblem } : {}),
    data: { warmup: loop.warmup, runs: loop.noop },
  });

  if ("notMeasured" in loop.contract) {
    figures.push(notMeasured("6 contract suite", loop.contract.notMeasured, "pnpm test:contract"));
  } else {
    const run = loop.contract;
    const problem = failed(run);
    const summary = /(\d+) passed, (\d+) failed/.exec(run.tail)?.[0];
    figures.push({
      id: "6 contract suite",
      title: "pnpm test:contract (whole contract suite)",
      measured: `${fmt.s(run.seconds)}, CPU ${fmt.s(run.cpuSeconds)}${summary ? ` (${summary})` : ""}`,
      value: run.seconds,
      display: fmt.s(run.seconds),
      target: "≤ 60 s",
      status: run.timedOut ? "invalid" : check(run.seconds, "<=", 60),
      ...(problem
        ? { note: `the suite did not pass (${problem}: ${reason(run)}); the time is still its full run` }
        : {}),
      data: run,
    });
  }
}

// ── figure 7: restart and idle memory ────────────────────────────────────────────────────────────────────────
async function restartFigures(figures: FigureResult[]) {
  const buildMs = buildServer(ROOT);
  log(`figure 7: dist/main.mjs built in ${fmt.s(buildMs / 1000)} (what pnpm start does first)`);
  const adminUrl = process.env.TEST_DATABASE_URL;
  const engines = [
    { label: "PGlite", storage: "an existing PGlite data directory", databaseUrl: undefined },
    ...(adminUrl
      ? [
          {
            label: "PostgreSQL",
            storage: "an existing PostgreSQL database",
            databaseUrl: await createDatabase(adminUrl, "toolplane_bench_restart"),
          },
        ]
      : []),
  ];
  for (const { label, storage, databaseUrl } of engines) {
    log(`  ${settings.restarts} restarts of node apps/server/dist/main.mjs on ${storage}…`);
    const restart = await measureRestart(ROOT, settings.restarts, settings.idleSecondsBeforeRss, { databaseUrl });
    const times = restart.restarts.map((r) => r.firstOkMs);
    const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? Number.NaN;
    log(
      `  ${label}: first start ${fmt.s(restart.firstStartMs / 1000)}; restarts ${times.map((t) => fmt.s(t / 1000)).join(", ")}`,
    );
    figures.push({
      id: `7 restart ${label}`,
      title: `restart on ${storage} → first 200 (median of ${times.length})`,
      measured: `${times.map((t) => fmt.s(t / 1000)).join(", ")} (CPU ${restart.restarts.map((r) => fmt.s(r.cpuMs / 1000)).join(", ")})`,
      value: median / 1000,
      display: fmt.s(median / 1000),
      target: "≤ 1.5 s",
      status: check(median / 1000, "<=", 1.5),
      data: { buildMs, ...restart },
    });
    figures.push({
      id: `7 idle RSS ${label}`,
      title: `RSS of the idle server ${settings.idleSecondsBeforeRss} s after start`,
      measured: `${restart.idleRssMb.toFixed(0)} MB`,
      value: restart.idleRssMb,
      display: `${restart.idleRssMb.toFixed(0)} MB`,
      target: "≤ 150 MB",
      status: Number.isNaN(restart.idleRssMb) ? "invalid" : check(restart.idleRssMb, "<=", 150),
      data: restart,
    });
  }
}

// ── the run ──────────────────────────────────────────────────────────────────────────────────────────────────
const stamp = new Date(started).toISOString().replace(/[:.]/g, "-");
mkdirSync(RESULTS, { recursive: true });

if (profileMode) {
  const profileDir = mkdtempSync(join(tmpdir(), "toolplane-bench-profile-"));
  try {
    const figures: FigureResult[] = [];
    if (wants(1) || wants(2)) await httpFigures(figures, profileDir);
    if (wants(4)) await mcpFigures(figures, profileDir);
    console.log("\nRatios under the profiler (not figures to report: profiling slows every target):");
    for (const f of figures) console.log(`  ${f.id}: ${f.measured} → ${f.display}`);
    const profiles = readdirSync(profileDir)
      .filter((f) => f.endsWith(".cpuprofile"))
      .sort();
    const summaries = profiles.map((f) => ({ file: f, ...summariseProfile(join(profileDir, f)) }));
    if (wants(7)) {
      log("figure 7: one restart of the server under the CPU profiler…");
      const startDir = join(profileDir, "restart");
      mkdirSync(startDir);
      buildServer(ROOT);
      await measureRestart(ROOT, 1, 0, { cpuProfileDir: startDir });
      for (const f of readdirSync(startDir))
        summaries.push({ file: "restart", ...summariseProfile(join(startDir, f)) });
    }
    for (const s of summaries) {
      console.log(`\nProfile ${s.file} (${fmt.int(s.busyMs)} ms busy)`);
      console.log("  self time by area:");
      for (const a of s.selfByArea) console.log(`    ${a.percent.toFixed(1).padStart(5)}%  ${a.area}`);
      console.log("  inclusive (a frame of this area on the stack; lower bounds across awaits):");
      for (const a of s.inclusive) console.log(`    ${a.percent.toFixed(1).padStart(5)}%  ${a.area}`);
      console.log("  inclusive by source file of ours:");
      for (const f of s.files) console.log(`    ${f.percent.toFixed(1).padStart(5)}%  ${f.file}`);
      console.log("  self:");
      for (const f of s.self) console.log(`    ${f.percent.toFixed(1).padStart(5)}%  ${f.fn}  [${f.area}]`);
    }
    const file = join(RESULTS, `${stamp}-profile.json`);
    writeFileSync(file, `${JSON.stringify({ startedAt: stamp, machine: await machine(), summaries }, null, 2)}\n`);
    console.log(`\nWrote ${file}`);
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
  }
} else {
  const machineInfo = await machine();
  log(`machine: ${machineInfo.cpu}, ${machineInfo.cores} cores, Node ${machineInfo.node}`);
  const figures: FigureResult[] = [];
  const http = [1, 2, 3].filter(wants);
  if (http.length) await guarded(figures, http.map(String), () => httpFigures(figures, undefined));
  const mcp = [4, 5].filter(wants);
  if (mcp.length) await guarded(figures, mcp.map(String), () => mcpFigures(figures));
  if (wants(6)) await guarded(figures, ["6"], () => devLoopFigures(figures));
  if (wants(7)) await guarded(figures, ["7"], () => restartFigures(figures));

  const order = (f: FigureResult) => Number.parseInt(f.id, 10) * 10 + (/^\d+ PostgreSQL/.test(f.id) ? 1 : 0);
  figures.sort((a, b) => order(a) - order(b));
  const result: BenchResult = {
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    machine: machineInfo,
    settings: { ...settings, quick, only: only ?? "all", logLevel },
    loadAverageAtEnd: loadavg(),
    figures,
  };
  const file = join(RESULTS, `${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\n${consoleTable(result)}\n\nWrote ${file}`);

  if (args.includes("--markdown")) {
    const md = join(ROOT, "BENCHMARKS.md");
    const text = readFileSync(md, "utf8");
    const start = "<!-- bench:table:start -->";
    const end = "<!-- bench:table:end -->";
    const a = text.indexOf(start);
    const b = text.indexOf(end);
    if (a < 0 || b < a) throw new Error(`BENCHMARKS.md has no ${start} … ${end} block`);
    const block = markdownTable(result, only, text.slice(a + start.length, b));
    writeFileSync(md, `${text.slice(0, a + start.length)}\n${block}\n${text.slice(b)}`);
    console.log(`Updated the table in ${md}`);
  }
}

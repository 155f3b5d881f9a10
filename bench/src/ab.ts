// `pnpm --filter @toolplane/bench ab '<variants>'`: two (or more) gateway processes side by side on one PostgreSQL,
// differing only in the environment each is started with, e.g.
//   '{"lane on":{},"lane off":{"TOOLPLANE_MCP_FAST_CALLS":"0"}}'
// Each serves the same calls (figure 4's 2025 → 2025 and 2026-07-28 → 2026-07-28 legs, one call in flight) in
// alternating rounds, and the CPU each process spent per call is read from /proc: a change's effect, measured within
// one run, where the machine's load moves both sides alike (between runs absolute values move by ±1 ms here).
//   --rounds=N     rounds of 200 calls per leg and variant (default 6)
//   --inflight=N   instead, N clients per leg in a closed loop for 2 s per leg, variant and round (figure 4's
//                  throughput rows use 16): the CPU per call then also shows what batching saves, and calls/s
//                  per leg are printed (medians of rounds; both variants share the machine, so compare them only
//                  within one run)
// A variant's LOG_LEVEL is the level its server logs at (default info, as in figure 4).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { compareCallLatency, compareCallThroughput, type OpenCaller } from "./calls.ts";
import { createSession, sessionClients, startModernUpstream, startUpstream, writeUpstreamCatalog } from "./mcp.ts";
import { cpuMs } from "./restart.ts";
import { Target } from "./targets.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CALLS = { perRound: 200, warmup: 20 };
const variants = JSON.parse(process.argv.find((a) => a.startsWith("{")) ?? "{}") as Record<
  string,
  Record<string, string>
>;
const rounds = Number(process.argv.find((a) => a.startsWith("--rounds="))?.slice(9) ?? 6);
const inflight = Number(process.argv.find((a) => a.startsWith("--inflight="))?.slice(11) ?? 0);
const SLICE_SECONDS = 2;
const adminUrl = process.env.TEST_DATABASE_URL;
if (Object.keys(variants).length < 2 || !adminUrl) {
  console.error('usage (from bench/): node ../scripts/with-postgres.mjs tsx src/ab.ts \'{"A":{…env},"B":{…env}}\'');
  process.exit(2);
}

interface Variant {
  target: Target;
  legs: Record<string, OpenCaller>;
  cpuMs: number;
  calls: number;
  /** CPU per call of each round: how far the rounds spread. */
  perRound: number[];
  p50: Record<string, number[]>;
  p99: Record<string, number[]>;
  rps: Record<string, number[]>;
}

async function createDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl ?? "");
  url.pathname = `/${name}`;
  return url.toString();
}

const scratch = mkdtempSync(join(tmpdir(), "toolplane-ab-"));
const [everything, modern] = await Promise.all([startUpstream(ROOT), startModernUpstream()]);
for (const upstream of [everything, modern]) writeUpstreamCatalog(scratch, upstream);
const started: Record<string, Variant> = {};
try {
  let n = 0;
  for (const [name, env] of Object.entries(variants)) {
    const databaseUrl = await createDatabase(`toolplane_ab_${n++}`);
    const saved = { ...process.env };
    Object.assign(process.env, env); // Target.start passes this process's environment on
    const target = await Target.start({
      mode: "full",
      catalogDir: scratch,
      databaseUrl,
      logLevel: env.LOG_LEVEL,
    }).finally(() => {
      process.env = saved;
    });
    const sessionOn = async (slug: string) => {
      const res = await fetch(`${target.url}/provider-deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${target.ready.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `ab ${slug}`, provider_id: target.ready.providers[slug] }),
      });
      if (res.status !== 201) throw new Error(`${name}: deploying ${slug} answered ${res.status}`);
      return createSession(target, ((await res.json()) as { id: string }).id);
    };
    const viaEverything = await sessionClients(await sessionOn(everything.slug), everything);
    const viaModern = await sessionClients(await sessionOn(modern.slug), modern);
    const legs = { "2025 → 2025": viaEverything["2025-11-25"], "2026 → 2026": viaModern["2026-07-28"] };
    started[name] = { target, legs, cpuMs: 0, calls: 0, perRound: [], p50: {}, p99: {}, rps: {} };
    console.log(`${name}: gateway pid ${target.ready.pid}, env ${JSON.stringify(env)}`);
  }
  for (let round = 1; round <= rounds; round++) {
    for (const variant of Object.values(started)) {
      const before = cpuMs(variant.target.ready.pid);
      const [cpuBefore, callsBefore] = [variant.cpuMs, variant.calls];
      const roundDone = () => variant.perRound.push((variant.cpuMs - cpuBefore) / (variant.calls - callsBefore));
      if (inflight > 0) {
        const load = { connections: inflight, warmupSeconds: 0, slices: 1, sliceSeconds: SLICE_SECONDS };
        const rates = await compareCallThroughput(variant.legs, load);
        variant.cpuMs += cpuMs(variant.target.ready.pid) - before;
        for (const [leg, r] of Object.entries(rates)) {
          variant.calls += r.rps * SLICE_SECONDS;
          variant.rps[leg] = [...(variant.rps[leg] ?? []), r.rps];
          variant.p50[leg] = [...(variant.p50[leg] ?? []), r.p50Ms];
          variant.p99[leg] = [...(variant.p99[leg] ?? []), r.p99Ms];
        }
        roundDone();
        continue;
      }
      const latency = await compareCallLatency(variant.legs, { rounds: 1, ...CALLS });
      variant.cpuMs += cpuMs(variant.target.ready.pid) - before;
      variant.calls += Object.keys(variant.legs).length * (CALLS.perRound + CALLS.warmup);
      for (const [leg, l] of Object.entries(latency)) {
        variant.p50[leg] = [...(variant.p50[leg] ?? []), l.p50Ms];
        variant.p99[leg] = [...(variant.p99[leg] ?? []), l.p99Ms];
      }
      roundDone();
    }
    console.log(`round ${round}/${rounds} done`);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
  for (const [name, variant] of Object.entries(started)) {
    const legs = Object.keys(variant.p50)
      .map(
        (leg) =>
          `${leg} ${inflight > 0 ? `${median(variant.rps[leg] ?? []).toFixed(0)} calls/s, ` : ""}p50 ${median(variant.p50[leg] ?? []).toFixed(2)} / p99 ${median(variant.p99[leg] ?? []).toFixed(1)} ms`,
      )
      .join("; ");
    const spread = variant.perRound.map((ms) => ms.toFixed(2)).join(" ");
    console.log(
      `${name}: CPU ${(variant.cpuMs / variant.calls).toFixed(2)} ms per call (rounds: ${spread}); median of rounds: ${legs}`,
    );
  }
} finally {
  await Promise.all(Object.values(started).map((variant) => variant.target.stop()));
  await Promise.all([everything.close(), modern.close()]);
  rmSync(scratch, { recursive: true, force: true });
}

// Load generation with autocannon (as a library), always from this process, never from the server's.
import autocannon from "autocannon";

export interface Request {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

export interface Throughput {
  /** Mean requests per second over the measured slices (after the warm-up). */
  rps: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx, socket errors and timeouts: any of them makes the figure invalid. */
  non2xx: number;
  errors: number;
  timeouts: number;
  bytesPerResponse: number;
}

function run(options: autocannon.Options, onResponse?: (ms: number, status: number) => void) {
  return new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
    if (onResponse) {
      instance.on("response", (_client, status, _bytes, ms) => {
        onResponse(ms, status);
      });
    }
  });
}

const base = (request: Request): autocannon.Options => ({
  url: request.url,
  method: request.method ?? "GET",
  headers: { ...(request.body ? { "content-type": "application/json" } : {}), ...request.headers },
  ...(request.body ? { body: request.body } : {}),
});

export interface ThroughputOptions {
  connections: number;
  warmupSeconds: number;
  /** The measured time of each request is cut into this many slices, measured in turns. */
  slices: number;
  sliceSeconds: number;
}

/**
 * Closed-loop throughput of several requests compared with each other: `connections` keep one request in flight
 * each. After a warm-up of each, the requests are measured in alternating slices (a, b, c, a, b, c, …), so a
 * burst of background load on a shared machine hits all of them alike and their ratio stays meaningful.
 */
export async function compareThroughput(
  requests: Record<string, Request & { window?: { before(): Promise<void>; after(): Promise<void> } }>,
  { connections, warmupSeconds, slices, sliceSeconds }: ThroughputOptions,
): Promise<Record<string, Throughput>> {
  const totals: Record<string, { requests: number; bytes: number; non2xx: number; errors: number; timeouts: number }> =
    {};
  const latencies: Record<string, number[]> = {};
  for (const [name, request] of Object.entries(requests)) {
    totals[name] = { requests: 0, bytes: 0, non2xx: 0, errors: 0, timeouts: 0 };
    latencies[name] = [];
    if (warmupSeconds > 0) await run({ ...base(request), connections, duration: warmupSeconds });
  }
  for (let slice = 0; slice < slices; slice++) {
    for (const [name, request] of Object.entries(requests)) {
      const samples = latencies[name] ?? [];
      await request.window?.before();
      const result = await run({ ...base(request), connections, duration: sliceSeconds }, (ms) => {
        samples.push(ms);
      });
      await request.window?.after();
      const total = totals[name];
      if (!total) continue;
      total.requests += result.requests.total;
      total.bytes += result.throughput.total;
      total.non2xx += result.non2xx;
      total.errors += result.errors;
      total.timeouts += result.timeouts;
    }
  }
  const out: Record<string, Throughput> = {};
  for (const [name, total] of Object.entries(totals)) {
    const sorted = [...(latencies[name] ?? [])].sort((a, b) => a - b);
    out[name] = {
      rps: total.requests / (slices * sliceSeconds),
      requests: total.requests,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      non2xx: total.non2xx,
      errors: total.errors,
      timeouts: total.timeouts,
      bytesPerResponse: total.requests ? Math.round(total.bytes / total.requests) : 0,
    };
  }
  return out;
}

export interface LatencySummary {
  samples: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  failures: number;
}

/**
 * Sequential latency of several requests compared with each other: one connection, one request in flight,
 * the requests measured in alternating blocks so drift hits all of them alike. Autocannon's own histogram
 * has 1 ms buckets, so the sub-millisecond times come from its per-response event instead.
 */
export async function compareLatency(
  requests: Record<string, Request>,
  { rounds, perRound, warmup }: { rounds: number; perRound: number; warmup: number },
): Promise<Record<string, LatencySummary>> {
  const samples: Record<string, number[]> = {};
  const failures: Record<string, number> = {};
  for (const [name, request] of Object.entries(requests)) {
    samples[name] = [];
    failures[name] = 0;
    await run({ ...base(request), connections: 1, amount: warmup });
  }
  for (let round = 0; round < rounds; round++) {
    for (const [name, request] of Object.entries(requests)) {
      let first = true;
      await run({ ...base(request), connections: 1, amount: perRound + 1 }, (ms, status) => {
        if (status < 200 || status > 299) failures[name] = (failures[name] ?? 0) + 1;
        else if (first)
          first = false; // the first response of a block also paid for the TCP connect
        else samples[name]?.push(ms);
      });
    }
  }
  const out: Record<string, LatencySummary> = {};
  for (const [name, values] of Object.entries(samples)) {
    const sorted = [...values].sort((a, b) => a - b);
    out[name] = {
      samples: sorted.length,
      p50Ms: percentile(sorted, 50),
      p90Ms: percentile(sorted, 90),
      p99Ms: percentile(sorted, 99),
      meanMs: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
      failures: failures[name] ?? 0,
    };
  }
  return out;
}

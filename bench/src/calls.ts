// Figure 4's load: MCP clients that each hold their own connection(s) and make one tools/call at a time, timed from
// the moment the request is written to the moment its JSON-RPC answer is in. autocannon (load.ts) cannot wait for
// an answer that comes on another stream (the legacy HTTP+SSE transport mcp-hub serves), so every leg of figure 4,
// direct, through the gateway and through the peer, is measured by this one client, and their differences are the
// servers' and not the clients'.
import { type Agent, request } from "node:http";
import { type LatencySummary, percentile } from "./load.ts";

/** One connected MCP client: `call()` makes the measured tools/call and answers what went wrong, if anything. */
export interface Caller {
  call(): Promise<string | undefined>;
  close(): void;
}

/** Connects one client (initialize and whatever else its transport needs before the first call). */
export type OpenCaller = () => Promise<Caller>;

export const MCP_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" };

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * POST over node:http on the client's own `agent` (a real client holds its own connection). A kept-alive socket
 * the server closed while it sat idle (between two blocks of the comparison) is retried once on a new one, as
 * Node's documentation advises for `reusedSocket`: that reset is a race of idle timeouts, not a failed call.
 */
export function post(url: string, headers: Record<string, string>, body: string, agent?: Agent): Promise<Answer> {
  return postOnce(url, headers, body, agent).catch((err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
    if (err.code === "ECONNRESET" && err.reusedSocket) return postOnce(url, headers, body, agent);
    throw err;
  });
}

function postOnce(url: string, headers: Record<string, string>, body: string, agent?: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { ...MCP_HEADERS, ...headers }, agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on("error", reject);
    });
    req.on("error", (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    req.end(body);
  });
}

/** What is wrong with a tools/call answer: not a 200, an error result, or not the expected text. */
export function callProblem(status: number, text: string, expect: string): string | undefined {
  return status === 200 && text.includes(expect) && !text.includes('"isError":true')
    ? undefined
    : `tools/call answered HTTP ${status}: ${text.slice(0, 200)}`;
}

/** A Streamable HTTP client whose requests carry fixed headers (a session id, or 2026-07-28's per-request ones). */
export function httpCaller(
  agent: Agent,
  url: string,
  headers: Record<string, string>,
  body: string,
  expect: string,
): Caller {
  return {
    call: async () => {
      const { status, text } = await post(url, headers, body, agent);
      return callProblem(status, text, expect);
    },
    close: () => agent.destroy(),
  };
}

/** The answered calls' times and the failures of one leg. */
class Tally {
  readonly times: number[] = [];
  failures = 0;
  problem: string | undefined;

  /** Makes one call and records its time, or its failure. */
  async time(caller: Caller): Promise<void> {
    const start = performance.now();
    const problem = await caller.call().catch((err: unknown) => String(err));
    if (!problem) this.times.push(performance.now() - start);
    else {
      this.failures++;
      this.problem ??= problem;
    }
  }

  summary(): LatencySummary & { problem?: string } {
    const sorted = [...this.times].sort((a, b) => a - b);
    return {
      samples: sorted.length,
      p50Ms: percentile(sorted, 50),
      p90Ms: percentile(sorted, 90),
      p99Ms: percentile(sorted, 99),
      meanMs: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
      failures: this.failures,
      ...(this.problem ? { problem: this.problem } : {}),
    };
  }
}

/** Opens `count` clients of every leg (each connected once, beforehand, as long-lived MCP clients are). */
async function openAll(openers: Record<string, OpenCaller>, count: number, into: Record<string, Caller[]>) {
  for (const [name, open] of Object.entries(openers)) {
    into[name] = await Promise.all(Array.from({ length: count }, () => open()));
  }
}

const closeAll = (clients: Record<string, Caller[]>) => {
  for (const list of Object.values(clients)) for (const c of list) c.close();
};

/**
 * Sequential latency of several clients compared with each other: one client each, one call in flight, measured in
 * alternating blocks of `perRound` calls so drift hits all of them alike (compareLatency's method, with MCP clients).
 */
export async function compareCallLatency(
  openers: Record<string, OpenCaller>,
  { rounds, perRound, warmup }: { rounds: number; perRound: number; warmup: number },
): Promise<Record<string, LatencySummary & { problem?: string }>> {
  const clients: Record<string, Caller[]> = {};
  const tallies = Object.fromEntries(Object.keys(openers).map((name) => [name, new Tally()]));
  const block = async (caller: Caller | undefined, calls: number, tally: Tally | undefined) => {
    for (let i = 0; caller && tally && i < calls; i++) await tally.time(caller);
  };
  try {
    await openAll(openers, 1, clients);
    for (const name of Object.keys(openers)) await block(clients[name]?.[0], warmup, new Tally());
    for (let round = 0; round < rounds; round++) {
      for (const name of Object.keys(openers)) await block(clients[name]?.[0], perRound, tallies[name]);
    }
  } finally {
    closeAll(clients);
  }
  return Object.fromEntries(Object.entries(tallies).map(([name, tally]) => [name, tally.summary()]));
}

export interface CallThroughput extends LatencySummary {
  /** Answered calls per second over the measured slices (after the warm-up). */
  rps: number;
  /** The first problem seen, if any. */
  problem?: string;
}

/**
 * Closed-loop throughput of several legs compared with each other, `connections` clients each: after a warm-up
 * of each leg, the legs are measured in alternating slices, as compareThroughput does with autocannon.
 */
export async function compareCallThroughput(
  openers: Record<string, OpenCaller>,
  options: { connections: number; warmupSeconds: number; slices: number; sliceSeconds: number },
): Promise<Record<string, CallThroughput>> {
  const { connections, warmupSeconds, slices, sliceSeconds } = options;
  const clients: Record<string, Caller[]> = {};
  const tallies = Object.fromEntries(Object.keys(openers).map((name) => [name, new Tally()]));
  const window = async (name: string, seconds: number, tally = new Tally()) => {
    const until = performance.now() + seconds * 1000;
    const loop = async (caller: Caller) => {
      while (performance.now() < until) await tally.time(caller);
    };
    await Promise.all((clients[name] ?? []).map(loop));
  };
  try {
    await openAll(openers, connections, clients);
    for (const name of Object.keys(openers)) if (warmupSeconds > 0) await window(name, warmupSeconds);
    for (let slice = 0; slice < slices; slice++) {
      for (const name of Object.keys(openers)) await window(name, sliceSeconds, tallies[name]);
    }
  } finally {
    closeAll(clients);
  }
  return Object.fromEntries(
    Object.entries(tallies).map(([name, tally]) => [
      name,
      { ...tally.summary(), rps: tally.times.length / (slices * sliceSeconds) },
    ]),
  );
}

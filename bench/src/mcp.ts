// Figures 4 and 5, the MCP gateway: a catalog provider whose upstream is server-everything over Streamable HTTP
// (one shared process, started here), deployed and put in sessions through the API. Calls go to a session's
// connection_url and, for the baseline, straight to the upstream, as raw JSON-RPC over Streamable HTTP (what an
// MCP client sends), so the load generator measures the HTTP exchange and nothing of a client library.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Agent, type IncomingHttpHeaders, request } from "node:http";
import { createServer } from "node:net";
import { join } from "node:path";
import type { Request } from "./load.ts";
import type { Target } from "./targets.ts";

export const UPSTREAM_SLUG = "bench-upstream";
const MCP_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" };

export interface Upstream {
  /** The Streamable HTTP endpoint. */
  url: string;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === "string") throw new Error("no free port");
  return address.port;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

/** server-everything (the server package's own dependency) over Streamable HTTP, in its own process. */
export async function startUpstream(root: string): Promise<Upstream> {
  const entry = join(root, "apps/server/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  const port = await freePort();
  const child = spawn(process.execPath, [entry, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`server-everything exited with ${child.exitCode}`);
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      break;
    if (attempt > 600) {
      await stop(child);
      throw new Error("server-everything did not start within 30 s");
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url, close: () => stop(child) };
}

/** A catalog entry (YAML is a superset of JSON) for a provider served by the upstream. */
export function writeUpstreamCatalog(dir: string, upstreamUrl: string): void {
  const entry = {
    slug: UPSTREAM_SLUG,
    name: "Benchmark upstream",
    description: "server-everything over Streamable HTTP, started by the benchmark",
    publisher: { slug: "toolplane-bench", name: "Toolplane benchmark" },
    current_version: "1.0.0",
    versions: [
      {
        version: "1.0.0",
        status: "released",
        runtime: { type: "remote", url: upstreamUrl, protocol: "streamable_http" },
        config_schema: { type: "object", properties: {}, additionalProperties: false },
        tools: [{ name: "echo" }],
      },
    ],
    auth_methods: [],
  };
  writeFileSync(join(dir, `${UPSTREAM_SLUG}.yaml`), `${JSON.stringify(entry, null, 2)}\n`);
}

interface RpcAnswer {
  status: number;
  sessionId: string | null;
  body: { result?: Record<string, unknown>; error?: { message?: string } } | undefined;
}

/**
 * POST over node:http: `agent` is the client's own connection (each MCP client holds one, as a real one would;
 * the global fetch pool would share sockets between the simulated clients).
 */
function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  agent?: Agent,
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
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
    req.on("error", reject);
    req.end(body);
  });
}

/** One JSON-RPC message over Streamable HTTP; the answer comes as JSON or as an SSE event. */
async function rpc(
  url: string,
  headers: Record<string, string>,
  method: string,
  params: unknown,
  id?: number,
  agent?: Agent,
): Promise<RpcAnswer> {
  const body = JSON.stringify({ jsonrpc: "2.0", ...(id === undefined ? {} : { id }), method, params });
  const res = await post(url, headers, body, agent);
  const sse = res.headers["content-type"]?.includes("text/event-stream");
  const json = sse
    ? res.text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5))
        .pop()
    : res.text;
  const sessionId = res.headers["mcp-session-id"];
  return {
    status: res.status,
    sessionId: typeof sessionId === "string" ? sessionId : null,
    body: json ? (JSON.parse(json) as RpcAnswer["body"]) : undefined,
  };
}

const failure = (what: string, answer: RpcAnswer) =>
  answer.status !== 200 && answer.status !== 202
    ? `${what} answered HTTP ${answer.status}${answer.body?.error?.message ? `: ${answer.body.error.message}` : ""}`
    : answer.body?.error
      ? `${what}: ${answer.body.error.message ?? "JSON-RPC error"}`
      : answer.body?.result?.isError
        ? `${what}: the tool answered an error`
        : undefined;

/**
 * The protocol version the bench's clients ask for: the one the gateway's upstream client (MCP SDK 1.32) negotiates,
 * so the direct call and the gateway's upstream leg are the same call (from 2025-11-25 on, a Streamable HTTP server
 * may open every SSE response with a priming event, which costs server-everything ~1.5 ms per call).
 */
const PROTOCOL_VERSION = "2025-11-25";

/** initialize + notifications/initialized, as every MCP client opens; the headers later requests carry. */
async function openMcp(url: string, headers: Record<string, string>, agent?: Agent): Promise<Record<string, string>> {
  const init = await rpc(
    url,
    headers,
    "initialize",
    { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "toolplane-bench", version: "1" } },
    1,
    agent,
  );
  const problem = failure("initialize", init);
  if (problem) throw new Error(problem);
  const version = String(init.body?.result?.protocolVersion ?? PROTOCOL_VERSION);
  const next = {
    ...headers,
    "mcp-protocol-version": version,
    ...(init.sessionId ? { "mcp-session-id": init.sessionId } : {}),
  };
  const initialized = await rpc(url, next, "notifications/initialized", {}, undefined, agent);
  const notified = failure("notifications/initialized", initialized);
  if (notified) throw new Error(notified);
  return next;
}

const echoCall = (name: string, id: number) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: { message: "bench" } } });

/** The key of the upstream's echo tool in a tools/list (the gateway may prefix it with the provider's slug). */
async function echoKey(url: string, headers: Record<string, string>, agent?: Agent): Promise<string> {
  const list = await rpc(url, headers, "tools/list", {}, 2, agent);
  const problem = failure("tools/list", list);
  if (problem) throw new Error(problem);
  const tools = (list.body?.result?.tools ?? []) as { name: string }[];
  const key = tools.find((t) => t.name === "echo" || t.name.endsWith("_echo"))?.name;
  if (!key) throw new Error(`tools/list has no echo tool (${tools.map((t) => t.name).join(", ")})`);
  return key;
}

/** Calls echo; what went wrong, if anything (the echoed text must come back, not an error result). */
async function echoFails(
  url: string,
  headers: Record<string, string>,
  tool: string,
  agent?: Agent,
): Promise<string | undefined> {
  const { status, text } = await post(url, headers, echoCall(tool, 3), agent);
  return status === 200 && text.includes("bench") && !text.includes('"isError":true')
    ? undefined
    : `tools/call ${tool} answered HTTP ${status}: ${text.slice(0, 200)}`;
}

/** One MCP client's work on a session, on its own connection: open, list the tools, call echo; what failed. */
async function useSession(url: string, secret: string): Promise<string | undefined> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const headers = await openMcp(url, { authorization: `Bearer ${secret}` }, agent);
    return await echoFails(url, headers, await echoKey(url, headers, agent), agent);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    agent.destroy();
  }
}

export interface McpSession {
  id: string;
  secret: string;
  /** The connection_url's path on the target (the app's public URL has no port). */
  url: string;
}

/** A session over one deployment of the upstream provider, through the API. */
export async function createSession(target: Target, deploymentId: string): Promise<McpSession> {
  const res = await fetch(`${target.url}/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${target.ready.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      providers: [{ provider_deployment: { type: "reference", provider_deployment_id: deploymentId } }],
    }),
  });
  if (res.status !== 201) throw new Error(`POST /sessions answered ${res.status}: ${await res.text()}`);
  const session = (await res.json()) as { id: string; secret: string; connection_url: string | null };
  if (!session.connection_url) throw new Error(`session ${session.id} has no connection_url`);
  return { id: session.id, secret: session.secret, url: `${target.url}${new URL(session.connection_url).pathname}` };
}

export interface EchoCalls {
  /** The echo tool's key in the session. */
  tool: string;
  requests: { direct: Request; gateway: Request };
}

/**
 * Figure 4's two requests: the same tools/call, directly to the upstream and through the session, each made
 * once to check it answers the echo (a gateway that cannot serve it fails here).
 */
export async function prepareEchoCalls(upstream: Upstream, session: McpSession): Promise<EchoCalls> {
  const gatewayHeaders = await openMcp(session.url, { authorization: `Bearer ${session.secret}` });
  const tool = await echoKey(session.url, gatewayHeaders);
  const directHeaders = await openMcp(upstream.url, {});
  const problem =
    (await echoFails(upstream.url, directHeaders, "echo")) ?? (await echoFails(session.url, gatewayHeaders, tool));
  if (problem) throw new Error(problem);
  const call = (url: string, headers: Record<string, string>, name: string): Request => ({
    url,
    method: "POST",
    headers: { ...MCP_HEADERS, ...headers },
    body: echoCall(name, 7),
  });
  return {
    tool,
    requests: { direct: call(upstream.url, directHeaders, "echo"), gateway: call(session.url, gatewayHeaders, tool) },
  };
}

export interface ConcurrentSessions {
  sessions: number;
  errors: number;
  /** The distinct problems, with how often each happened. */
  problems: Record<string, number>;
  createSeconds: number;
  runSeconds: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  rssAfterMb: number;
  /** (peak − before) / sessions. */
  kbPerSession: number;
}

/**
 * Figure 5: `count` sessions (created through the API beforehand), then one MCP client per session, all at
 * once: each opens, lists the tools and calls one. The server's RSS is sampled throughout.
 */
export async function concurrentSessions(
  target: Target,
  deploymentId: string,
  count: number,
): Promise<ConcurrentSessions> {
  const created = performance.now();
  const sessions: McpSession[] = [];
  while (sessions.length < count) {
    const batch = Math.min(20, count - sessions.length);
    sessions.push(...(await Promise.all(Array.from({ length: batch }, () => createSession(target, deploymentId)))));
  }
  const createSeconds = (performance.now() - created) / 1000;
  const rssBeforeMb = target.rssMb();
  let rssPeakMb = rssBeforeMb;
  const sampler = setInterval(() => {
    rssPeakMb = Math.max(rssPeakMb, target.rssMb());
  }, 50);
  const started = performance.now();
  const outcomes = await Promise.all(sessions.map((s) => useSession(s.url, s.secret)));
  const runSeconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const rssAfterMb = target.rssMb();
  rssPeakMb = Math.max(rssPeakMb, rssAfterMb);
  const problems: Record<string, number> = {};
  for (const problem of outcomes) if (problem) problems[problem] = (problems[problem] ?? 0) + 1;
  return {
    sessions: count,
    errors: outcomes.filter(Boolean).length,
    problems,
    createSeconds,
    runSeconds,
    rssBeforeMb,
    rssPeakMb,
    rssAfterMb,
    kbPerSession: ((rssPeakMb - rssBeforeMb) * 1024) / count,
  };
}

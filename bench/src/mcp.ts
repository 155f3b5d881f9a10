// Figures 4 and 5, the MCP gateway: catalog providers whose upstreams are MCP servers over Streamable HTTP, each in
// its own process started here (server-everything, of the 2025 era, and the server tests' 2026-07-28 fixture),
// deployed and put in sessions through the API. Calls go to a session's connection_url and, for the baseline,
// straight to the upstream, as raw JSON-RPC (what an MCP client sends), so the load measures the HTTP exchange and
// nothing of a client library. The peer gateway, mcp-hub, runs in its own process over the same server-everything.
import { type ChildProcess, fork, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Caller, callProblem, httpCaller, type OpenCaller, post } from "./calls.ts";
import type { Target } from "./targets.ts";

export interface Upstream {
  /** The catalog slug of the provider it serves. */
  slug: string;
  /** The Streamable HTTP endpoint. */
  url: string;
  /** The protocol version its direct (baseline) client speaks: what the gateway's upstream leg negotiates. */
  version: ProtocolVersion;
  /** The tool figure 4 calls, its arguments and a text its answer holds. */
  call: { tool: string; arguments: Record<string, unknown>; expect: string };
  close(): Promise<void>;
}

/**
 * The protocol versions the bench's clients speak: 2025-11-25 (initialize, then an Mcp-Session-Id), the version
 * the gateway's upstream client negotiates with a 2025 server, so the direct call and the gateway's upstream leg
 * are the same call (from 2025-11-25 on, a Streamable HTTP server may open every SSE response with a priming
 * event, which costs server-everything ~1.5 ms per call); 2025-06-18, what mcp-hub negotiates upstream (the
 * baseline of its figure); 2026-07-28, stateless (every request carries its version, client info and capabilities
 * in `_meta`, and its method and name in headers).
 */
export type ProtocolVersion = "2025-11-25" | "2025-06-18" | "2026-07-28";
const MODERN = "2026-07-28";
const CLIENT_INFO = { name: "toolplane-bench", version: "1" };

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

/** Polls `ready` every 50 ms for 30 s; the child's exit ends the wait. */
async function waitFor(child: ChildProcess, what: string, ready: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    if (await ready().catch(() => false)) return;
    if (attempt > 600) {
      await stop(child);
      throw new Error(`${what} did not start within 30 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** server-everything (the server package's own dependency, MCP 2025-11-25) over Streamable HTTP. */
export async function startUpstream(root: string): Promise<Upstream> {
  const entry = join(root, "apps/server/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
  const port = await freePort();
  const child = spawn(process.execPath, [entry, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitFor(child, "server-everything", () => fetch(url).then(() => true));
  return {
    slug: "bench-upstream",
    url,
    version: "2025-11-25",
    call: { tool: "echo", arguments: { message: "bench" }, expect: "Echo: bench" },
    close: () => stop(child),
  };
}

/**
 * A 2026-07-28 server: the server tests' fixture (apps/server/test/support/upstream-modern.ts, the MCP SDK v2's
 * createMcpHandler as its documentation shows), in its own process under the tsx loader. server-everything
 * speaks only the 2025 revisions.
 */
export async function startModernUpstream(): Promise<Upstream> {
  const { url, child } = await forkServer("modern-upstream.ts", [], "the 2026-07-28 upstream");
  return {
    slug: "bench-modern",
    url,
    version: MODERN,
    call: { tool: "shout", arguments: { text: "bench" }, expect: "BENCH" },
    close: () => stop(child),
  };
}

/** A process of bench/src under the tsx loader that serves HTTP and sends its URL to the parent once it listens. */
async function forkServer(script: string, args: string[], what: string) {
  const child = fork(fileURLToPath(new URL(`./${script}`, import.meta.url)), args, {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once("message", (message: { url: string }) => resolve(message.url));
    child.once("exit", (code) => reject(new Error(`${what} exited with ${code}`)));
  });
  return { url, child };
}

/**
 * Figure 4's floor: a byte-forwarding process in front of `upstream` (forwarder.ts). Its URL serves what the
 * upstream's does, so the same clients call it.
 */
export async function startForwarder(upstream: Upstream): Promise<{ url: string; close(): Promise<void> }> {
  const { url, child } = await forkServer("forwarder.ts", [upstream.url], `the forwarder to ${upstream.slug}`);
  return { url, close: () => stop(child) };
}

export interface Peer {
  /** The hub's MCP endpoint (the legacy HTTP+SSE transport: GET opens the stream, messages are POSTed). */
  url: string;
  /** The upstream's echo tool as the hub names it (`<server>__<tool>`). */
  tool: string;
  /** The hub's process, whose CPU time figure 4i reads. */
  pid: number;
  close(): Promise<void>;
}

/**
 * The peer gateway mcp-hub (npm, a devDependency of bench), in its own process, configured with `upstream` as its
 * one remote server (a Streamable HTTP URL, as its README configures remote servers); its state and log files go
 * to `dir`. Ready when its health says the server is connected.
 */
export async function startPeer(root: string, upstream: Upstream, dir: string): Promise<Peer> {
  const config = join(dir, "mcp-hub.json");
  writeFileSync(config, `${JSON.stringify({ mcpServers: { everything: { url: upstream.url } } }, null, 2)}\n`);
  const port = await freePort();
  const entry = join(root, "bench/node_modules/mcp-hub/dist/cli.js");
  const child = spawn(process.execPath, [entry, "--port", String(port), "--config", config], {
    env: { PATH: process.env.PATH ?? "", HOME: dir, XDG_STATE_HOME: dir, XDG_CONFIG_HOME: dir, XDG_DATA_HOME: dir },
    stdio: "ignore",
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(child, "mcp-hub", async () => {
    const health = (await (await fetch(`${base}/api/health`)).json()) as {
      state?: string;
      servers?: { status?: string }[];
    };
    return health.state === "ready" && health.servers?.[0]?.status === "connected";
  });
  return {
    url: `${base}/mcp`,
    tool: `everything__${upstream.call.tool}`,
    pid: child.pid ?? 0,
    close: () => stop(child),
  };
}

/** A catalog entry (YAML is a superset of JSON) for a provider served by the upstream. */
export function writeUpstreamCatalog(dir: string, upstream: Upstream): void {
  const entry = {
    slug: upstream.slug,
    name: `Benchmark upstream (${upstream.version})`,
    description: "An MCP server over Streamable HTTP, started by the benchmark",
    publisher: { slug: "toolplane-bench", name: "Toolplane benchmark" },
    current_version: "1.0.0",
    versions: [
      {
        version: "1.0.0",
        status: "released",
        runtime: { type: "remote", url: upstream.url, protocol: "streamable_http" },
        config_schema: { type: "object", properties: {}, additionalProperties: false },
        tools: [{ name: upstream.call.tool }],
      },
    ],
    auth_methods: [],
  };
  writeFileSync(join(dir, `${upstream.slug}.yaml`), `${JSON.stringify(entry, null, 2)}\n`);
}

interface RpcAnswer {
  status: number;
  sessionId: string | null;
  body: { result?: Record<string, unknown>; error?: { message?: string } } | undefined;
}

/** The `_meta` and headers every 2026-07-28 request carries (it has no initialize). */
const modernRequest = (method: string, params: Record<string, unknown>, name?: string) => ({
  headers: { "mcp-protocol-version": MODERN, "mcp-method": method, ...(name ? { "mcp-name": name } : {}) },
  params: {
    ...params,
    _meta: {
      "io.modelcontextprotocol/protocolVersion": MODERN,
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
      "io.modelcontextprotocol/clientCapabilities": {},
    },
  },
});

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
  const sse = String(res.headers["content-type"]).includes("text/event-stream");
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

/** initialize + notifications/initialized, as every 2025 client opens; the headers later requests carry. */
async function openMcp(
  url: string,
  headers: Record<string, string>,
  agent?: Agent,
  version: ProtocolVersion = "2025-11-25",
): Promise<Record<string, string>> {
  const init = await rpc(
    url,
    headers,
    "initialize",
    { protocolVersion: version, capabilities: {}, clientInfo: CLIENT_INFO },
    1,
    agent,
  );
  const problem = failure("initialize", init);
  if (problem) throw new Error(problem);
  const next = {
    ...headers,
    "mcp-protocol-version": String(init.body?.result?.protocolVersion ?? version),
    ...(init.sessionId ? { "mcp-session-id": init.sessionId } : {}),
  };
  const initialized = await rpc(url, next, "notifications/initialized", {}, undefined, agent);
  const notified = failure("notifications/initialized", initialized);
  if (notified) throw new Error(notified);
  return next;
}

/** The key of the upstream's `tool` in a session's tools/list (the gateway may prefix it with the provider's slug). */
async function toolKey(url: string, headers: Record<string, string>, tool: string, agent?: Agent): Promise<string> {
  const list = await rpc(url, headers, "tools/list", {}, 2, agent);
  const problem = failure("tools/list", list);
  if (problem) throw new Error(problem);
  const tools = (list.body?.result?.tools ?? []) as { name: string }[];
  const key = tools.find((t) => t.name === tool || t.name.endsWith(`_${tool}`))?.name;
  if (!key) throw new Error(`tools/list has no ${tool} tool (${tools.map((t) => t.name).join(", ")})`);
  return key;
}

const callBody = (params: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params });

/**
 * An MCP client over Streamable HTTP calling `tool` (the upstream's call under the name `tool`), on its own
 * connection: a 2025 client opens with initialize and then sends its session id; a 2026-07-28 client sends the
 * same self-contained request every time.
 */
export function streamableClient(
  url: string,
  auth: Record<string, string>,
  version: ProtocolVersion,
  upstream: Upstream,
  tool = upstream.call.tool,
): OpenCaller {
  const { arguments: args, expect } = upstream.call;
  return async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      if (version === MODERN) {
        const { headers, params } = modernRequest("tools/call", { name: tool, arguments: args }, tool);
        return httpCaller(agent, url, { ...auth, ...headers }, callBody(params), expect);
      }
      const headers = await openMcp(url, auth, agent, version);
      return httpCaller(agent, url, headers, callBody({ name: tool, arguments: args }), expect);
    } catch (err) {
      agent.destroy();
      throw err;
    }
  };
}

/**
 * A 2025-06-18 client of the legacy HTTP+SSE transport (mcp-hub's /mcp): a GET opens the event stream, whose first
 * event names the URL to POST messages to; each POST is accepted with a 202 and its answer comes on the stream.
 * A call is timed from its POST to its answer's event.
 */
export function sseClient(url: string, tool: string, upstream: Upstream): OpenCaller {
  return async () => {
    const stream = new Agent({ keepAlive: true, maxSockets: 1 });
    const posts = new Agent({ keepAlive: true, maxSockets: 1 });
    const waiting = new Map<number, (text: string) => void>();
    const close = () => {
      stream.destroy();
      posts.destroy();
    };
    try {
      const endpoint = await new Promise<string>((resolve, reject) => {
        const onEvent = (event: string) => {
          const name = /^event: ?(.*)$/m.exec(event)?.[1] ?? "message";
          const data = event
            .split("\n")
            .filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).trimStart())
            .join("\n");
          if (name === "endpoint") resolve(new URL(data, url).toString());
          else if (name === "message") {
            const id = (JSON.parse(data) as { id?: number }).id;
            if (id !== undefined) waiting.get(id)?.(data);
            if (id !== undefined) waiting.delete(id);
          }
        };
        const req = request(url, { headers: { accept: "text/event-stream" }, agent: stream }, (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new Error(`GET ${url} answered HTTP ${res.statusCode}`));
            return;
          }
          res.setEncoding("utf8");
          let buffer = "";
          res.on("data", (chunk: string) => {
            buffer += chunk.replace(/\r\n/g, "\n");
            for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
              onEvent(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
            }
          });
          // A closed stream answers every call still waiting (with a problem, not a hang).
          res.on("close", () => {
            for (const answer of waiting.values()) answer("the event stream closed");
            waiting.clear();
          });
        });
        req.on("error", reject);
        req.end();
      });
      let next = 0;
      const send = async (method: string, params: unknown, notification = false): Promise<string> => {
        const id = ++next;
        const answered = notification ? Promise.resolve("") : new Promise<string>((r) => waiting.set(id, r));
        const body = JSON.stringify({ jsonrpc: "2.0", ...(notification ? {} : { id }), method, params });
        const res = await post(endpoint, {}, body, posts);
        if (res.status !== 202) {
          waiting.delete(id);
          return `POST ${method} answered HTTP ${res.status}: ${res.text.slice(0, 200)}`;
        }
        return answered;
      };
      const init = await send("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: CLIENT_INFO,
      });
      if (!init.includes('"result"')) throw new Error(`initialize through ${url}: ${init.slice(0, 200)}`);
      await send("notifications/initialized", {}, true);
      const { arguments: args, expect } = upstream.call;
      const caller: Caller = {
        call: async () => callProblem(200, await send("tools/call", { name: tool, arguments: args }), expect),
        close,
      };
      return caller;
    } catch (err) {
      close();
      throw err;
    }
  };
}

/** One MCP client's work on a session, on its own connection: open, list the tools, call echo; what failed. */
async function useSession(url: string, secret: string, upstream: Upstream): Promise<string | undefined> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const headers = await openMcp(url, { authorization: `Bearer ${secret}` }, agent);
    const tool = await toolKey(url, headers, upstream.call.tool, agent);
    const { status, text } = await post(
      url,
      headers,
      callBody({ name: tool, arguments: upstream.call.arguments }),
      agent,
    );
    return callProblem(status, text, upstream.call.expect);
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

/** A session over one deployment, through the API. */
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

/**
 * Figure 4's clients of `session` (over `upstream`) for each client era, calling the upstream's tool under the
 * session's key for it; each is opened and called once here, so a gateway that cannot serve it fails before any
 * measurement.
 */
export async function sessionClients(
  session: McpSession,
  upstream: Upstream,
): Promise<Record<"2025-11-25" | "2026-07-28", OpenCaller>> {
  const auth = { authorization: `Bearer ${session.secret}` };
  const tool = await toolKey(session.url, await openMcp(session.url, auth), upstream.call.tool);
  const clients = {
    "2025-11-25": streamableClient(session.url, auth, "2025-11-25", upstream, tool),
    "2026-07-28": streamableClient(session.url, auth, MODERN, upstream, tool),
  } as const;
  await Promise.all(Object.values(clients).map(checkClient));
  return clients;
}

/** Opens the client and makes one call; throws what went wrong. */
export async function checkClient(open: OpenCaller): Promise<void> {
  const client = await open();
  try {
    const problem = await client.call();
    if (problem) throw new Error(problem);
  } finally {
    client.close();
  }
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
  upstream: Upstream,
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
  const outcomes = await Promise.all(sessions.map((s) => useSession(s.url, s.secret, upstream)));
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

import { createHash } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  type CallToolResult,
  CallToolResultSchema,
  ErrorCode,
  McpError,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { newId } from "../lib/ids.ts";
import { connectUpstream, type UpstreamTarget } from "./connect.ts";

/** Why an upstream request produced no result; the codes are the tool call `error.code` values. */
export class UpstreamFailure extends Error {
  constructor(
    /** `provider_removed`: the session or its provider was removed while the call was under way. */
    readonly code: "timeout" | "upstream_unavailable" | "upstream_error" | "provider_removed",
    message: string,
    /** The upstream's JSON-RPC error code, for `upstream_error`. */
    readonly rpcCode?: number,
  ) {
    super(message);
  }
}

const envMs = (name: string, fallback: number): number => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};
/** Upper bound for one upstream request, connecting included (TOOLPLANE_UPSTREAM_TIMEOUT_MS, default 30 s). */
export const upstreamTimeoutMs = () => envMs("TOOLPLANE_UPSTREAM_TIMEOUT_MS", 30_000);

/** One upstream MCP server as reached with one set of credentials and config: a lazily (re)connected client. */
export class Upstream {
  /** The current connection (`prn_…`), recorded on tool calls; null until connected. */
  runId: string | null = null;
  lastUsedAt = Date.now();
  private inFlight = 0;
  private client: Promise<Client> | null = null;
  private tools: Tool[] | null = null;

  constructor(private readonly target: UpstreamTarget) {}

  get idle(): boolean {
    return this.inFlight === 0;
  }

  /** The upstream's tools (every page), cached for the connection until it announces a change. */
  async listTools(timeoutMs: number): Promise<Tool[]> {
    if (this.tools && this.client) return this.tools;
    return this.run(timeoutMs, async (client, options) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, options);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      this.tools = tools;
      return tools;
    });
  }

  async callTool(name: string, args: Record<string, unknown> | undefined, timeoutMs: number): Promise<CallToolResult> {
    return this.run(
      timeoutMs,
      async (client, options) =>
        (await client.callTool({ name, arguments: args }, CallToolResultSchema, options)) as CallToolResult,
    );
  }

  async close(): Promise<void> {
    const client = this.client;
    this.reset();
    await client?.then((c) => c.close()).catch(() => undefined);
  }

  /**
   * Runs one request within the deadline. An upstream that forgot our MCP session (HTTP 404 on its session id)
   * is re-initialised and the request retried once: it never reached the tool. Anything else fails the request.
   */
  private async run<T>(timeoutMs: number, fn: (client: Client, options: RequestOptions) => Promise<T>): Promise<T> {
    this.inFlight++;
    this.lastUsedAt = Date.now();
    const deadline = AbortSignal.timeout(timeoutMs);
    try {
      for (let attempt = 0; ; attempt++) {
        const client = await abortable(this.connected(timeoutMs), deadline);
        try {
          return await fn(client, { signal: deadline, timeout: timeoutMs, maxTotalTimeout: timeoutMs });
        } catch (error) {
          if (attempt > 0 || !(error instanceof StreamableHTTPError && error.code === 404)) throw error;
          await this.close();
        }
      }
    } catch (error) {
      throw classify(error, deadline.aborted, timeoutMs);
    } finally {
      this.inFlight--;
      this.lastUsedAt = Date.now();
    }
  }

  private connected(timeoutMs: number): Promise<Client> {
    if (this.client) return this.client;
    const connecting = connectUpstream(
      this.target,
      // A crashed child or dropped connection is forgotten, so the next request reconnects.
      () => {
        if (this.client === connecting) this.reset();
      },
      AbortSignal.timeout(timeoutMs),
    ).then((client) => {
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        this.tools = null;
      });
      this.runId = newId("prn");
      return client;
    });
    connecting.catch(() => {
      if (this.client === connecting) this.reset();
    });
    this.client = connecting;
    return connecting;
  }

  private reset(): void {
    this.client = null;
    this.tools = null;
    this.runId = null;
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function classify(error: unknown, timedOut: boolean, timeoutMs: number): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  if (timedOut || (error instanceof McpError && error.code === ErrorCode.RequestTimeout)) {
    return new UpstreamFailure("timeout", `The upstream MCP server did not answer within ${timeoutMs} ms.`);
  }
  if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
    return new UpstreamFailure("upstream_error", error.message.replace(/^(MCP error -?\d+: )+/, ""), error.code);
  }
  const detail = error instanceof McpError ? "closed the connection" : "could not be reached or started";
  return new UpstreamFailure("upstream_unavailable", `The upstream MCP server ${detail} during the request.`);
}

/**
 * The process's upstream connections, keyed by session provider and a fingerprint of the credentials and config
 * applied (a refreshed token or changed config opens a new connection; the old one idles out). Idle connections
 * are closed (TOOLPLANE_UPSTREAM_IDLE_MS, default 5 min); `closeAll` ends every one (stdio children included).
 */
export class UpstreamPool {
  private readonly upstreams = new Map<string, Upstream>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly idleMs = envMs("TOOLPLANE_UPSTREAM_IDLE_MS", 300_000)) {}

  get(sessionProviderId: string, target: UpstreamTarget): Upstream {
    const fingerprint = createHash("sha256").update(JSON.stringify(target)).digest("base64url");
    const key = `${sessionProviderId}:${fingerprint}`;
    let upstream = this.upstreams.get(key);
    if (!upstream) {
      upstream = new Upstream(target);
      this.upstreams.set(key, upstream);
      this.sweeper ??= setInterval(() => void this.closeIdle(), Math.min(this.idleMs, 60_000)).unref();
    }
    return upstream;
  }

  get size(): number {
    return this.upstreams.size;
  }

  async closeIdle(now = Date.now()): Promise<void> {
    const stale = [...this.upstreams].filter(([, u]) => u.idle && now - u.lastUsedAt >= this.idleMs);
    for (const [key] of stale) this.upstreams.delete(key);
    await Promise.all(stale.map(([, u]) => u.close()));
  }

  async closeAll(): Promise<void> {
    const all = [...this.upstreams.values()];
    this.upstreams.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await Promise.all(all.map((u) => u.close()));
  }
}

/** The one pool of this process: the gateway and the tool-calls API share its connections. */
export const upstreams = new UpstreamPool();

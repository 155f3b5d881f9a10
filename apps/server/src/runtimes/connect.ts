import { createRequire } from "node:module";
import { dirname } from "node:path";
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  Client,
  type ClientCapabilities,
  PROTOCOL_VERSION_META_KEY,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { Runtime } from "../db/schema.ts";
import { pruneCombinedSignals } from "../lib/abort-signal-any.ts";
import { tracedFetch, tracedRequest } from "../observability/tracing.ts";
import type { DirectTarget } from "./direct-call.ts";
import { runnerEnv } from "./runner.ts";
import { upstreamFetch, upstreamRequest } from "./upstream-fetch.ts";

// Every request of an upstream transport combines its signal with the connection's: on Node 20 that leaked.
pruneCombinedSignals();

/** Everything needed to open one upstream connection: the runtime plus the per-provider headers, query and env. */
export interface UpstreamTarget {
  runtime: Runtime;
  headers: Record<string, string>;
  query: Record<string, string>;
  env: Record<string, string>;
}

const requirePackage = createRequire(import.meta.url);
const PACKAGE_PLACEHOLDER = /\{package:([^}]+)\}/g;

/** `{package:NAME}` in a catalog runtime's args is the directory of that package as installed with this server. */
export function resolvePackagePlaceholders(arg: string): string {
  return arg.replace(PACKAGE_PLACEHOLDER, (_match, name: string) =>
    dirname(requirePackage.resolve(`${name}/package.json`)),
  );
}

/**
 * The transformer's variables a stdio child gets (next to the SDK's safe defaults and the runtime's own): never
 * `NODE_*`, which (NODE_OPTIONS) could lift a function's memory cap or preload code.
 */
function childEnv(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.toUpperCase().startsWith("NODE_")));
}

/**
 * The SDK transport for a target: the one place a runtime becomes a connection, for the gateway's pool and for
 * deploy probes alike. `stderr: "pipe"` lets a probe report why a child process died.
 */
export function createTransport(target: UpstreamTarget, stderr: "ignore" | "pipe" = "ignore"): Transport {
  const { runtime } = target;
  if (runtime.type === "stdio") {
    return new StdioClientTransport({
      command: runtime.command,
      args: runtime.args.map(resolvePackagePlaceholders),
      // The SDK adds only its safe default variables: the server's own secrets never reach a child.
      env: { ...runtime.env, ...runnerEnv(runtime), ...childEnv(target.env) },
      stderr,
    });
  }
  const url = remoteUrl(runtime.url, target);
  // Both transports send requestInit's headers on every request, the SSE stream's GET included.
  const requestInit = { headers: target.headers };
  return runtime.protocol === "sse"
    ? new SSEClientTransport(url, { requestInit, fetch: httpFetch })
    : new StreamableHTTPClientTransport(url, { requestInit, fetch: httpFetch });
}

/** The fetch of the HTTP transports, and the requests of direct calls: node:http with kept-alive sockets, traced. */
const httpFetch = tracedFetch(upstreamFetch);
const httpRequest = tracedRequest(upstreamRequest);

function remoteUrl(base: string, target: UpstreamTarget): URL {
  const url = new URL(base);
  for (const [name, value] of Object.entries(target.query)) url.searchParams.set(name, value);
  return url;
}

/**
 * Where direct calls (direct-call.ts) reach a connected client's upstream, with what its transport sends on every
 * request: for a server over Streamable HTTP, of either era (undefined over the legacy SSE transport or stdio).
 */
export function directTargetOf(
  target: UpstreamTarget,
  client: Client,
  name: string,
  capabilities: ClientCapabilities,
): DirectTarget | undefined {
  const { runtime } = target;
  const protocolVersion = client.getNegotiatedProtocolVersion();
  const transport = client.transport;
  if (runtime.type !== "remote" || runtime.protocol === "sse" || !protocolVersion) return undefined;
  if (!(transport instanceof StreamableHTTPClientTransport)) return undefined;
  const reached = {
    url: remoteUrl(runtime.url, target),
    request: httpRequest,
    headers: target.headers,
    protocolVersion,
  };
  if (client.getProtocolEra() !== "modern") {
    return transport.sessionId ? { ...reached, sessionId: transport.sessionId } : reached;
  }
  return {
    ...reached,
    envelope: {
      [PROTOCOL_VERSION_META_KEY]: protocolVersion,
      [CLIENT_INFO_META_KEY]: clientInfo(name),
      [CLIENT_CAPABILITIES_META_KEY]: capabilities,
    },
  };
}

const clientInfo = (name: string) => ({ name, version: "0.1.0" });

/**
 * A client of either protocol era: over HTTP it probes with `server/discover` and falls back to `initialize` for a
 * 2025 server; the legacy SSE transport and stdio children are spoken to in the 2025 era directly (a probe on
 * stdio would spawn a second child for every connection).
 */
export function createClient(target: UpstreamTarget, name: string, capabilities: ClientCapabilities = {}): Client {
  const probes = target.runtime.type === "remote" && target.runtime.protocol !== "sse";
  return new Client(clientInfo(name), {
    capabilities,
    ...(probes ? { versionNegotiation: { mode: "auto" as const } } : {}),
  });
}

import { Agent, createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A reverse proxy that authenticates for its clients: for a client that cannot send headers (the MCP conformance
 * suite), every request it makes, on any path, reaches one upstream endpoint (a session's `/mcp/<id>`) with
 * `Authorization: Bearer <token>` added — as the suite's raw requests, which keep only the URL's path, drop a
 * `?key=` query credential.
 */
export interface AuthProxy {
  /** The URL to hand the client: `http://127.0.0.1:<port>/mcp`. */
  url: string;
  close(): Promise<void>;
}

export interface AuthProxyOptions {
  /** The upstream endpoint every request goes to (its path and query replace the request's). */
  target: string;
  /** Sent as `Authorization: Bearer <token>` in place of any Authorization the client sent. */
  token: string;
  /**
   * The upstream's public origin (default: the target's): an Origin equal to the proxy's own becomes this one, as a
   * browser on the public URL would send it. Every other Origin passes unchanged, so the upstream's own Origin check
   * (DNS-rebinding protection) still decides what a foreign Origin gets.
   */
  publicOrigin?: string;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, not the message, so a proxy never forwards them. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Headers from `rawHeaders` (name case as sent, repeated fields as arrays), without hop-by-hop ones, those named in
 * `Connection`, and `skip`.
 */
function forwardable(rawHeaders: string[], connection: IncomingHttpHeaders["connection"], skip: string[] = []) {
  const dropped = new Set([...HOP_BY_HOP, ...skip]);
  for (const name of (connection ?? "").split(",")) if (name.trim()) dropped.add(name.trim().toLowerCase());
  const headers: Record<string, string | string[]> = {};
  const nameOf = new Map<string, string>(); // lower-case name → the first spelling seen
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    const value = rawHeaders[i + 1] as string;
    const lower = name.toLowerCase();
    if (dropped.has(lower)) continue;
    const key = nameOf.get(lower) ?? name;
    nameOf.set(lower, key);
    const previous = headers[key];
    headers[key] = previous === undefined ? value : [previous, value].flat();
  }
  return headers;
}

/** Starts an auth-adding reverse proxy on a free 127.0.0.1 port. */
export async function startAuthProxy({ target, token, publicOrigin }: AuthProxyOptions): Promise<AuthProxy> {
  const upstream = new URL(target);
  const upstreamOrigin = publicOrigin ?? upstream.origin;
  const agent = new Agent({ keepAlive: true });
  let ownOrigin = "";

  const server = createServer((req, res) => {
    // Host is the upstream's (as nginx's default `proxy_set_header Host $proxy_host`): Node sets it from `upstream`.
    const headers: OutgoingHttpHeaders = forwardable(req.rawHeaders, req.headers.connection, ["host", "authorization"]);
    headers.Authorization = `Bearer ${token}`;
    for (const name of Object.keys(headers)) {
      if (name.toLowerCase() === "origin" && headers[name] === ownOrigin) headers[name] = upstreamOrigin;
    }
    const forwarded = request(upstream, { method: req.method, headers, agent }, (answer) => {
      // Status and headers as they came; the body is piped as it streams (SSE is never buffered).
      res.writeHead(
        answer.statusCode ?? 502,
        answer.statusMessage,
        forwardable(answer.rawHeaders, answer.headers.connection),
      );
      res.flushHeaders();
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    forwarded.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    // A client that goes away (before its answer ended) aborts the upstream request: an SSE stream is then closed
    // upstream too, as it would be without the proxy.
    res.on("close", () => {
      if (!res.writableFinished) forwarded.destroy();
    });
    req.pipe(forwarded);
  });
  server.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  ownOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: `${ownOrigin}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}

import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import type { FetchLike } from "@modelcontextprotocol/client";

// Kept-alive sockets per upstream origin, shared by every upstream connection of the process. A socket left idle
// for IDLE_SOCKET_MS is closed by us, before the server's keep-alive timeout (Node's and Express's default is 5 s)
// closes it under a request we just wrote on it.
const IDLE_SOCKET_MS = 4_000;
const agents = {
  "http:": new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
  "https:": new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
};
const REDIRECT = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([204, 205, 304]);

/** A request as upstreamRequest sends it: headers as a plain object, a body only as a string. */
export interface UpstreamRequestInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** Sends one HTTP request to an upstream and resolves with its response, whose body is not read yet. */
export type UpstreamRequest = (url: URL, init: UpstreamRequestInit) => Promise<IncomingMessage>;

/**
 * One request on node:http with kept-alive sockets: what upstreamFetch is built on, and what direct calls
 * (direct-call.ts) use as it is, without a fetch Response, its Headers and a web stream around every answer.
 * A network failure rejects with a TypeError (the pool treats that as a lost connection); an abort rejects, or
 * destroys the response, with the signal's reason; redirects are not followed.
 */
export const upstreamRequest: UpstreamRequest = (url, init) => {
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) return Promise.reject(new TypeError(`fetch failed: unsupported protocol ${url.protocol}`));
  const { signal, body } = init;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const headers: OutgoingHttpHeaders = { ...init.headers };
  if (body !== undefined) headers["content-length"] = Buffer.byteLength(body);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;

  const attempt = (retried: boolean): Promise<IncomingMessage> =>
    new Promise<IncomingMessage>((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        request.destroy(signal?.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError"));
      };
      const done = signal ? whenAborted(signal, onAbort) : () => {};
      const request = send(url, { method: init.method, headers, agent }, (response) => {
        settled = true;
        response.once("close", done);
        resolve(response);
      });
      request.on("error", (error: NodeJS.ErrnoException) => {
        done();
        if (settled) return; // the response's stream reports it
        settled = true;
        if (signal?.aborted) reject(signal.reason);
        // A kept-alive socket the server closed just as we wrote on it: the request never reached it, so it is sent
        // once more on a new socket (Node's documented remedy; the bench's 16 clients met it between bursts).
        else if (request.reusedSocket && !retried && (error.code === "ECONNRESET" || error.code === "EPIPE")) {
          resolve(attempt(true));
        } else reject(new TypeError("fetch failed", { cause: error }));
      });
      request.end(body);
    });
  return attempt(false);
};

/**
 * `fetch` for the gateway's upstream MCP transports, on upstreamRequest. Every tools/call made one upstream
 * request, and undici's fetch cost about 0.3 ms of CPU more per request here than node:http (measured with the MCP
 * SDK's client against server-everything). Worse, the SDK's transport hands every request the same long-lived
 * AbortSignal, to which undici's fetch adds a listener that only goes away when the request is garbage collected:
 * thousands of listeners piled up on a busy upstream connection (Node warned at 1,500) and every new request paid
 * to add its own. Here the listener is removed as soon as the response has been read.
 *
 * It behaves as fetch does for what the transports use: a network failure rejects with a TypeError, an abort
 * rejects (or errors the body) with the signal's reason, an event stream's body streams, any other body is read
 * whole. Redirects and bodies other than strings go to the global fetch, which does everything.
 */
export const upstreamFetch: FetchLike = (input, init = {}) => {
  const url = new URL(String(input));
  if (!(url.protocol in agents) || (init.body !== undefined && init.body !== null && typeof init.body !== "string")) {
    return fetch(input, init);
  }
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  return upstreamRequest(url, {
    method: init.method ?? "GET",
    headers,
    ...(typeof init.body === "string" ? { body: init.body } : {}),
    ...(init.signal ? { signal: init.signal } : {}),
  }).then((response) => {
    if (REDIRECT.has(response.statusCode ?? 0) && response.headers.location) {
      response.resume();
      return fetch(input, init);
    }
    return toResponse(response);
  });
};

/** The requests under way per signal, and the one listener that aborts them all. */
const aborting = new WeakMap<AbortSignal, { requests: Set<() => void>; listener: () => void }>();

/**
 * Runs `abort` when `signal` aborts, until the returned function is called. Requests sharing a signal (the SDK's
 * transport passes one to all of a connection's requests) share one listener on it: one each made Node warn of a
 * leak at 11 listeners when 16 calls ran at once on an upstream connection.
 */
function whenAborted(signal: AbortSignal, abort: () => void): () => void {
  let entry = aborting.get(signal);
  if (!entry) {
    const requests = new Set<() => void>();
    const listener = () => {
      for (const request of [...requests]) request();
    };
    entry = { requests, listener };
    aborting.set(signal, entry);
    signal.addEventListener("abort", listener, { once: true });
  }
  const { requests, listener } = entry;
  requests.add(abort);
  return () => {
    if (!requests.delete(abort) || requests.size > 0) return;
    signal.removeEventListener("abort", listener);
    aborting.delete(signal);
  };
}

/** The node response as a fetch Response: an event stream streams, anything else is read whole first. */
function toResponse(response: IncomingMessage): Response | Promise<Response> {
  const status = response.statusCode ?? 500;
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  const init = { status, statusText: response.statusMessage ?? "", headers };
  if (NULL_BODY.has(status)) {
    response.resume();
    return new Response(null, init);
  }
  if (headers.get("content-type")?.includes("text/event-stream")) {
    return new Response(Readable.toWeb(response) as ReadableStream<Uint8Array>, init);
  }
  return readBody(response).then((body) => new Response(body, init));
}

/** A response's whole body (a network failure on the way is a TypeError, as fetch has it). */
export function readBody(response: IncomingMessage): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.once("end", () => resolve(Buffer.concat(chunks)));
    response.once("error", (error) => reject(new TypeError("fetch failed", { cause: error })));
  });
}

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

/**
 * `fetch` for the gateway's upstream MCP transports, on node:http with kept-alive sockets. Every tools/call makes one
 * upstream request, and undici's fetch cost about 0.3 ms of CPU more per request here than node:http (measured with
 * the MCP SDK's client against server-everything). Worse, the SDK's transport hands every request the same
 * long-lived AbortSignal, to which undici's fetch adds a listener that only goes away when the request is garbage
 * collected: thousands of listeners piled up on a busy upstream connection (Node warned at 1,500) and every new
 * request paid to add its own. Here the listener is removed as soon as the response has been read.
 *
 * It behaves as fetch does for what the transports use: a network failure rejects with a TypeError (the pool
 * treats that as a lost connection), an abort rejects (or errors the body) with the signal's reason, an event
 * stream's body streams, any other body is read whole. Redirects and bodies other than strings go to the global
 * fetch, which does everything.
 */
export const upstreamFetch: FetchLike = (input, init = {}) => {
  const url = new URL(String(input));
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent || (init.body !== undefined && init.body !== null && typeof init.body !== "string")) {
    return fetch(input, init);
  }
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const headers: OutgoingHttpHeaders = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const body = init.body ?? undefined;
  if (body !== undefined) headers["content-length"] = Buffer.byteLength(body);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;

  const attempt = (retried: boolean): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        request.destroy(signal?.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError"));
      };
      const done = signal ? whenAborted(signal, onAbort) : () => {};
      const request = send(url, { method: init.method ?? "GET", headers, agent }, (response) => {
        if (REDIRECT.has(response.statusCode ?? 0) && response.headers.location) {
          response.resume();
          done();
          settled = true;
          resolve(fetch(input, init));
          return;
        }
        settled = true;
        resolve(toResponse(response, done));
      });
      request.on("error", (error: NodeJS.ErrnoException) => {
        done();
        if (settled) return; // the body's stream reports it
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
function toResponse(response: IncomingMessage, done: () => void): Response | Promise<Response> {
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
    done();
    return new Response(null, init);
  }
  if (headers.get("content-type")?.includes("text/event-stream")) {
    response.once("close", done);
    return new Response(Readable.toWeb(response) as ReadableStream<Uint8Array>, init);
  }
  return new Promise<Response>((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.once("end", () => {
      done();
      resolve(new Response(Buffer.concat(chunks), init));
    });
    response.once("error", (error) => {
      done();
      reject(new TypeError("fetch failed", { cause: error }));
    });
  });
}

import type { IncomingMessage } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Notification,
  type Progress,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
} from "@modelcontextprotocol/client";
import { createParser } from "eventsource-parser";
import { readBody, type UpstreamRequest } from "./upstream-fetch.ts";

type Params = Record<string, unknown>;

/**
 * An upstream over Streamable HTTP as a direct call reaches it: what the SDK client's transport would send with
 * every request (its URL, the runtime's headers, the negotiated revision, and the `_meta` envelope of 2026-07-28
 * or the MCP session of a 2025 revision).
 */
export interface DirectTarget {
  url: URL;
  /** How a request reaches it: node:http with kept-alive sockets (upstream-fetch.ts), traced. */
  request: UpstreamRequest;
  headers: Record<string, string>;
  /** The negotiated revision (the `MCP-Protocol-Version` header). */
  protocolVersion: string;
  /**
   * 2026-07-28: the `_meta` envelope the SDK client puts on every request (revision, client info, capabilities).
   * Undefined for a 2025 revision, whose requests carry none.
   */
  envelope?: Params;
  /** A 2025 revision's MCP session (the `Mcp-Session-Id` header), when the server gave one at initialize. */
  sessionId?: string;
}

/** The request options the pool gives a request (see Upstream.run): the SDK client's, as far as a call uses them. */
export interface DirectCallOptions {
  signal: AbortSignal;
  timeout: number;
  maxTotalTimeout: number;
  resetTimeoutOnProgress: boolean;
  onprogress?: (progress: Progress) => void;
  /** Headers of this call (its `Mcp-Param-*` headers), sent besides the target's. */
  headers: Record<string, string>;
  /** Any other notification the upstream sends on the call's stream. */
  onnotification: (notification: Notification) => void;
}

/** The upstream answered with a redirect: nothing ran, and the call goes through the SDK client instead. */
export class DirectCallRedirected extends Error {}

/**
 * A tool name that goes in the `Mcp-Name` header as it is: visible ASCII, no space at either end. Any other name
 * the SDK client encodes (base64), so its calls go through the SDK.
 */
export const directCallableName = (name: unknown): name is string =>
  typeof name === "string" && /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(name);

/**
 * Request ids of direct calls. On a 2025 upstream they share the MCP session with the SDK client's requests, whose
 * ids count up from 0 per connection, and the server routes each answer by id: ours start at FIRST_ID (within
 * 32 bits, which some servers' ids are), far above what a connection's SDK client reaches.
 */
const FIRST_ID = 1_000_000_000;
const LAST_ID = 2 ** 31 - 1;
let lastId = FIRST_ID - 1;
const nextId = () => (lastId = lastId >= LAST_ID ? FIRST_ID : lastId + 1);

/**
 * How a 2025 server's answer stream is resumed after it ended before the response, as the SDK client's transport
 * does it (its default reconnection options): after the server's `retry` or 1 s growing by 1.5× (at most 30 s),
 * and given up after 2 failed attempts in a row.
 */
const RESUME = { initialDelayMs: 1_000, growth: 1.5, maxDelayMs: 30_000, maxFailures: 2 };

/**
 * A `tools/call` sent on the HTTP exchange of the upstream's revision without the SDK client's protocol layer and
 * transport: they cost ~0.45 ms of the ~4 ms the gateway adds to a call at one in flight (their zod checks of
 * every message, the request's envelope and headers, web streams; BENCHMARKS.md). It mirrors what the SDK client
 * (2.4) does for one request:
 * - the body: the params with a progress token (the request id) in `_meta` when progress is asked for, and on
 *   2026-07-28 the envelope there too; the headers: the runtime's, `MCP-Protocol-Version`, JSON content and an
 *   Accept of JSON and SSE, plus `Mcp-Method` and `Mcp-Name` (2026-07-28) or `Mcp-Session-Id` (2025);
 * - the answer: JSON (one message or a batch) or an SSE stream whose messages are progress (for this call: passed
 *   on, and the timeout starts again), other notifications (passed on), and the response. A 2025 server may also
 *   ask something on it: a `ping` is answered, anything else refused as the SDK client refuses a method it has no
 *   handler for (the pool sends calls of connections that relay sampling, elicitation or roots through the SDK);
 * - a 2025 stream that ends before its response after the server gave an event id is resumed with
 *   `Last-Event-ID` (see RESUME); on 2026-07-28, where answers are per request, the call fails at once;
 * - a 2026-07-28 server's 400 whose body is this request's JSON-RPC error is that error; any other non-2xx is an
 *   SdkHttpError, as the pool expects (a 404 or 400 reconnects and retries once);
 * - the result: on 2026-07-28 a `resultType` is required, `input_required` is returned as it came (inputRequests,
 *   requestState, _meta), a Tasks extension's `task` (a CreateTaskResult, SEP-2663) as it came, `complete` without
 *   its `resultType`, any other type is an error; a 2025
 *   result is returned without the `resultType` that is not its revision's vocabulary;
 * - the timeout (reset by progress up to the total), and the caller's signal: either cancels the call, on
 *   2026-07-28 by ending the HTTP exchange, on 2025 by a `notifications/cancelled` (the SDK client sends none when
 *   the total runs out; this does, so the upstream stops too).
 * Unlike the SDK client it does not check a complete 2026-07-28 result against the revision's schema (the result
 * goes on as the upstream sent it, as every other request's does: see `unchecked`).
 */
export function callDirect(target: DirectTarget, params: Params, options: DirectCallOptions): Promise<Params> {
  const id = nextId();
  const modern = target.envelope !== undefined;
  const sent =
    modern || options.onprogress
      ? {
          ...params,
          _meta: {
            ...target.envelope,
            ...(params._meta as Params | undefined),
            ...(options.onprogress ? { progressToken: id } : {}),
          },
        }
      : params;
  const body = JSON.stringify({ method: "tools/call", params: sent, jsonrpc: "2.0", id });
  const exchange = new AbortController();
  const startedAt = Date.now();

  return new Promise<Params>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (error: unknown, result?: Params) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      if (result) return resolve(result);
      exchange.abort(); // a call that failed (timed out, cancelled) ends its HTTP exchange
      reject(error);
    };
    const cancel = (reason: unknown) => {
      if (!settled && !modern) {
        post(target, {
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: id, reason: String(reason) },
        });
      }
      settle(reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason)));
    };
    const onAbort = () => cancel(options.signal.reason);
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => cancel(new SdkError(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: options.timeout })),
        options.timeout,
      );
    };
    if (options.signal.aborted) return settle(new SdkError(SdkErrorCode.RequestTimeout, String(options.signal.reason)));
    options.signal.addEventListener("abort", onAbort, { once: true });
    arm();

    const onMessage = (message: Params) => {
      if ("method" in message) {
        if (message.id !== undefined) {
          // A server→client request: none exists in 2026-07-28; a 2025 server's ping is answered.
          if (!modern) post(target, answerTo(message));
          return;
        }
        const notification = message as unknown as Notification;
        const { progressToken, ...progress } = (notification.params ?? {}) as Params;
        // The SDK client's protocol layer keeps a cancellation of a server→client request to itself.
        if (notification.method === "notifications/cancelled") return;
        if (notification.method !== "notifications/progress") return options.onnotification(notification);
        if (progressToken !== id) return;
        if (options.resetTimeoutOnProgress) {
          const elapsed = Date.now() - startedAt;
          if (elapsed >= options.maxTotalTimeout) {
            return cancel(
              new SdkError(SdkErrorCode.RequestTimeout, "Maximum total timeout exceeded", {
                maxTotalTimeout: options.maxTotalTimeout,
                totalElapsed: elapsed,
              }),
            );
          }
          arm();
        }
        options.onprogress?.(progress as unknown as Progress);
        return;
      }
      if (message.id !== id) return;
      if ("error" in message) {
        const error = message.error as { code: number; message: string; data?: unknown };
        return settle(ProtocolError.fromError(error.code, error.message, error.data));
      }
      try {
        settle(null, modern ? decodedResult(message.result) : withoutResultType(message.result));
      } catch (error) {
        settle(error);
      }
    };

    void target
      .request(target.url, {
        method: "POST",
        headers: requestHeaders(target, { name: String(params.name), own: options.headers }),
        body,
        signal: exchange.signal,
      })
      .then(async (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          response.resume();
          throw new DirectCallRedirected(`The upstream redirected a call (HTTP ${status}).`);
        }
        if (status < 200 || status >= 300) {
          const text = await textOf(response);
          const error = text === null || !modern ? undefined : rpcErrorFor(text, id);
          if (status === 400 && error) return onMessage(error);
          throw new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
            status,
            statusText: response.statusMessage ?? "",
            text,
          });
        }
        // 202: nothing for this request, which then waits for its timeout (as with the SDK client).
        if (status === 202) return void response.resume();
        const type = mediaType(response);
        if (type === "application/json") {
          const data = JSON.parse((await readBody(response)).toString()) as unknown;
          for (const message of Array.isArray(data) ? data : [data]) {
            if (!isMessage(message)) throw new SdkError(SdkErrorCode.InvalidResult, "Invalid JSON-RPC message");
            onMessage(message);
          }
          if (!settled) throw new SdkError(SdkErrorCode.ConnectionClosed, "The upstream's answer had no response.");
        } else if (type === "text/event-stream") {
          const position: StreamPosition = {};
          await readEvents(response, onMessage, () => settled, position).catch((error: unknown) => {
            if (modern || position.lastEventId === undefined) throw error;
          });
          if (!modern && position.lastEventId !== undefined) {
            await resume(target, position, onMessage, () => settled, exchange.signal);
          }
          if (!settled)
            throw new SdkError(SdkErrorCode.ConnectionClosed, "The upstream's stream ended before its response.");
        } else {
          response.resume();
          throw new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, `Unexpected content type: ${type}`, {
            contentType: type,
          });
        }
      })
      .catch((error: unknown) => settle(error));
  });
}

/** Where a 2025 answer stream got to: the last event id the server gave, and the reconnection delay it asked for. */
interface StreamPosition {
  lastEventId?: string;
  retryMs?: number;
}

/**
 * Resumes a 2025 answer stream that ended (or broke) before the response, with `GET` and `Last-Event-ID`, until
 * the call is settled or RESUME gives up; a server that does not offer resumption (405) ends it at once.
 */
async function resume(
  target: DirectTarget,
  position: StreamPosition,
  onMessage: (message: Params) => void,
  done: () => boolean,
  signal: AbortSignal,
): Promise<void> {
  for (let failures = 0; !done() && failures < RESUME.maxFailures; ) {
    const backoff = RESUME.initialDelayMs * RESUME.growth ** failures;
    await sleep(position.retryMs ?? Math.min(backoff, RESUME.maxDelayMs), undefined, { signal }).catch(() => undefined);
    if (done()) return;
    const { "content-type": _json, ...headers } = requestHeaders(target, undefined, ["text/event-stream"]);
    headers["last-event-id"] = position.lastEventId ?? "";
    const response = await target.request(target.url, { method: "GET", headers, signal }).catch(() => null);
    if (response?.statusCode === 405) return void response.resume();
    if (response?.statusCode !== 200 || mediaType(response) !== "text/event-stream") {
      response?.resume(); // its body is not read: drained, so the socket can serve again
      failures++;
      continue;
    }
    failures = 0;
    await readEvents(response, onMessage, done, position).catch(() => undefined);
  }
}

/** A 2025 client's answer to a server's request on a call's stream: `ping` is answered, anything else refused. */
function answerTo(request: Params): Params {
  return request.method === "ping"
    ? { jsonrpc: "2.0", id: request.id, result: {} }
    : { jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "Method not found" } };
}

/** A message (a notification, an answer) POSTed to a 2025 session, as the SDK client's transport sends one. */
function post(target: DirectTarget, message: Params): void {
  void target
    .request(target.url, { method: "POST", headers: requestHeaders(target), body: JSON.stringify(message) })
    .then((response) => response.resume())
    .catch(() => undefined);
}

/**
 * The headers the SDK client's transport sends with a POST: the runtime's, the session's (2025), the revision,
 * JSON content and an Accept of the runtime's types and `types` (JSON and SSE; a resuming GET asks for SSE); with
 * a 2026-07-28 tools/call, `Mcp-Method`, `Mcp-Name` and the call's own (its `Mcp-Param-*` headers).
 */
function requestHeaders(
  target: DirectTarget,
  call?: { name: string; own: Record<string, string> },
  types = ["application/json", "text/event-stream"],
) {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(target.headers)) headers[name.toLowerCase()] = value;
  if (target.sessionId) headers["mcp-session-id"] = target.sessionId;
  if (call && target.envelope) {
    for (const [name, value] of Object.entries(call.own)) headers[name.toLowerCase()] = value;
    headers["mcp-method"] = "tools/call";
    headers["mcp-name"] = call.name;
  }
  headers["mcp-protocol-version"] = target.protocolVersion;
  headers["content-type"] = "application/json";
  const accepted = headers.accept?.split(",").map((type) => type.trim().toLowerCase()) ?? [];
  headers.accept = [...new Set([...accepted, ...types])].join(", ");
  return headers;
}

const mediaType = (response: IncomingMessage) => response.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();

/** A response's body as text, or null if it cannot be read. */
const textOf = (response: IncomingMessage) =>
  readBody(response).then(
    (body) => body.toString(),
    () => null,
  );

/** A 400's body when it is this request's JSON-RPC error (how a 2026-07-28 server refuses a request). */
function rpcErrorFor(text: string, id: number): Params | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return isMessage(parsed) && parsed.id === id && "error" in parsed ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const isObject = (value: unknown): value is Params =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A JSON-RPC 2.0 request, notification or response, by shape. */
function isMessage(value: unknown): value is Params {
  if (!isObject(value) || value.jsonrpc !== "2.0") return false;
  if (typeof value.method === "string") return value.params === undefined || isObject(value.params);
  const id = value.id;
  if (typeof id !== "string" && typeof id !== "number") return false;
  return "result" in value ? isObject(value.result) && !("error" in value) : isObject(value.error);
}

/**
 * Feeds an SSE answer's `message` events to `onMessage` until it ends or `done()`; a malformed one is skipped. The
 * last event id and the server's `retry` go to `position`. What follows `done()` is read and dropped, as the SDK
 * client reads a stream to its end: the server ends it after the response, and the socket then serves the next
 * request (one a stream that never ended would hold is freed after STREAM_DRAIN_MS).
 */
function readEvents(
  response: IncomingMessage,
  onMessage: (message: Params) => void,
  done: () => boolean,
  position: StreamPosition,
): Promise<void> {
  const parser = createParser({
    onEvent: (event) => {
      if (event.id) position.lastEventId = event.id;
      if (!event.data || (event.event && event.event !== "message")) return;
      try {
        const message = JSON.parse(event.data) as unknown;
        if (isMessage(message)) onMessage(message);
      } catch {
        // as the SDK client: a message it cannot parse is reported and skipped
      }
    },
    onRetry: (ms) => {
      position.retryMs = ms;
    },
  });
  return new Promise<void>((resolve, reject) => {
    response.setEncoding("utf8");
    const onData = (chunk: string) => {
      parser.feed(chunk);
      if (!done()) return;
      response.off("data", onData);
      response.resume();
      const drained = setTimeout(() => response.destroy(), STREAM_DRAIN_MS).unref();
      response.once("close", () => clearTimeout(drained));
      resolve();
    };
    response.on("data", onData);
    response.once("end", resolve);
    response.once("close", resolve); // ended early (the socket closed): the caller sees no response
    response.once("error", reject);
  });
}

/** How long a stream may go on after its call's response before its socket is given up. */
const STREAM_DRAIN_MS = 5_000;

/** A 2025 result as the SDK client hands it on: without a `resultType`, which is not that revision's vocabulary. */
function withoutResultType(raw: unknown): Params {
  if (!isObject(raw) || !("resultType" in raw)) return raw as Params;
  const { resultType: _foreign, ...result } = raw;
  return result;
}

/** A 2026-07-28 result as the SDK client hands it on (see its codec's decodeResult). */
function decodedResult(raw: unknown): Params {
  const invalid = (detail: string, data: Params) =>
    new SdkError(SdkErrorCode.InvalidResult, `Invalid result for tools/call: ${detail}`, {
      method: "tools/call",
      ...data,
    });
  if (!isObject(raw)) throw invalid("not an object", {});
  const type = raw.resultType;
  if (type === undefined) {
    throw invalid(
      "missing required resultType — servers implementing protocol revision 2026-07-28 MUST include it (the absent-means-complete bridge applies only to earlier-revision servers)",
      { violation: "missing-resultType" },
    );
  }
  if (typeof type !== "string") throw invalid("non-string resultType", { resultType: type });
  if (type === "input_required") {
    const inputRequests = isObject(raw.inputRequests) ? raw.inputRequests : {};
    const requestState = typeof raw.requestState === "string" ? raw.requestState : undefined;
    if (Object.keys(inputRequests).length === 0 && requestState === undefined) {
      throw invalid(
        "input_required carries neither inputRequests nor requestState (every input_required result must include at least one of the two)",
        { violation: "input-required-missing-both" },
      );
    }
    return {
      resultType: "input_required",
      inputRequests,
      ...(requestState !== undefined ? { requestState } : {}),
      ...(isObject(raw._meta) ? { _meta: raw._meta } : {}),
    };
  }
  // The upstream created a task: only for a request that declared the Tasks extension, which the SDK client cannot
  // decode (see relayTaskResults in pool.ts).
  if (type === "task") return raw;
  if (type !== "complete") {
    throw new SdkError(SdkErrorCode.UnsupportedResultType, `Unsupported result type '${type}' for tools/call`, {
      resultType: type,
      method: "tools/call",
    });
  }
  return withoutResultType(raw);
}

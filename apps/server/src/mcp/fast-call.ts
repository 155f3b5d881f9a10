import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  type ClientCapabilities,
  classifyInboundRequest,
  type Implementation,
  isJsonContentType,
  LOG_LEVEL_META_KEY,
  MissingRequiredClientCapabilityError,
  type Notification,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type Result,
} from "@modelcontextprotocol/server";
import type { Request, Response } from "express";
import { HEADER_MISMATCH } from "../runtimes/param-headers.ts";
import { relayedCapabilities } from "../runtimes/pool.ts";
import {
  type CallRequest,
  type ConnectionRequest,
  callToolPerRequest,
  GATEWAY_INFO,
  type PerRequestCaller,
  protocolErrorOf,
  withServerInfo,
} from "./server.ts";

type Params = Record<string, unknown>;

/**
 * The one revision whose wire this lane writes: its encode contract (resultType, serverInfo in `_meta`) and its
 * per-request exchange (JSON, or SSE from the first notification) are mirrored below from the SDK's
 * createMcpHandler / PerRequestHTTPServerTransport. A later revision goes to the SDK until it is mirrored too.
 */
const REVISION = "2026-07-28";
/** The envelope keys the SDK lifts out of `_meta` before a handler sees it (its RESERVED_ENVELOPE_META_KEYS). */
const ENVELOPE_KEYS = [
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
];
/** Notifications of the 2025 revisions that 2026-07-28 dropped: the SDK's server refuses to send them on it. */
const REMOVED_NOTIFICATIONS = new Set([
  "notifications/initialized",
  "notifications/roots/list_changed",
  "notifications/tasks/status",
  "notifications/elicitation/complete",
]);
/** Members of a result the SDK does not give `content: []` when it has none (its TOOL_RESULT_FOREIGN_FAMILY_KEYS). */
const FOREIGN_RESULT_KEYS = ["task", "inputRequests", "requestState"];
const SSE_HEADERS = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache, no-transform",
  Connection: "keep-alive",
  "X-Accel-Buffering": "no",
};
/** The SDK's default interval between SSE keep-alive comments. */
const KEEP_ALIVE_MS = 15_000;

/** A 2026-07-28 tools/call the fast lane answers: its id, params, the handler's `_meta` and the envelope's capabilities. */
export interface FastCall {
  id: string | number;
  params: Params;
  meta: Params | undefined;
  /** The envelope the SDK lifts out of `_meta` (`ctx.mcpReq.envelope`). */
  envelope: Params;
  capabilities: ClientCapabilities | undefined;
}

const isPlainObject = (value: unknown): value is Params =>
  value !== null && typeof value === "object" && !Array.isArray(value);
/** The SDK compares standard headers after stripping HTTP whitespace (spaces and tabs) at both ends. */
const header = (req: Request, name: string) => {
  const value = req.headers[name];
  return typeof value === "string" ? value.replace(/^[ \t]+|[ \t]+$/g, "") : undefined;
};

/**
 * The request as a fast-lane tools/call, or null when anything about it is not the plain case (the SDK answers it,
 * with its own validation ladder and errors): one well-formed 2026-07-28 `tools/call` whose standard headers name
 * exactly its revision, method and tool, with no task, no retry of an `input_required` round, and a valid
 * progress token if any.
 */
export function fastCallOf(req: Request): FastCall | null {
  const plain = plainToolsCall(req);
  if (!plain) return null;
  const { body, id, params } = plain;
  if (
    header(req, "mcp-protocol-version") !== REVISION ||
    header(req, "mcp-method") !== "tools/call" ||
    header(req, "mcp-name") !== params.name
  ) {
    return null;
  }
  const { _meta: envelope, ...rest } = params;
  if (!isPlainObject(envelope)) return null;
  if (envelope.progressToken !== undefined && !isRequestId(envelope.progressToken)) return null;
  const { progressToken: _token, ...claim } = envelope;
  const claimKey = JSON.stringify(claim);
  let modern = envelopeVerdicts.get(claimKey);
  if (modern === undefined) {
    const route = classifyInboundRequest({
      httpMethod: req.method,
      protocolVersionHeader: header(req, "mcp-protocol-version"),
      mcpMethodHeader: header(req, "mcp-method"),
      mcpNameHeader: header(req, "mcp-name"),
      body,
    });
    modern =
      route.kind === "modern" && route.classification.era === "modern" && route.classification.revision === REVISION;
    if (envelopeVerdicts.size >= MAX_ENVELOPE_VERDICTS) envelopeVerdicts.clear();
    envelopeVerdicts.set(claimKey, modern);
  }
  if (!modern) return null;
  // As the SDK hands them to its handler: the envelope lifted out of `_meta`, and `_meta` gone if nothing is left.
  const kept: Params = {};
  const lifted: Params = {};
  for (const [key, value] of Object.entries(envelope)) (ENVELOPE_KEYS.includes(key) ? lifted : kept)[key] = value;
  const meta = Object.keys(kept).length > 0 ? kept : undefined;
  return {
    id,
    params: meta ? { ...rest, _meta: meta } : rest,
    meta,
    envelope: lifted,
    capabilities: envelope[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined,
  };
}

/**
 * The SDK's verdict (classifyInboundRequest) on the 2026-07-28 requests the lane has seen, by their `_meta` without
 * the progress token: whether it takes each as a request of this revision. It parses the whole message with zod
 * three times and the envelope once, 70 µs of the 300 µs a 2026-07-28 call spent here before it went upstream
 * (stage timestamps at one call in flight), and a client sends the same envelope with every call. The lane takes
 * only messages the SDK's checks cannot refuse but for their envelope (plainToolsCall: exactly a JSON-RPC 2.0
 * request, an integer or string id; standard headers naming exactly the revision, method and tool; a valid
 * progress token), so the verdict on one request holds for every request with the same envelope.
 */
const envelopeVerdicts = new Map<string, boolean>();
/** Envelopes remembered before the map starts over (a client sends one; a process serves many clients). */
const MAX_ENVELOPE_VERDICTS = 1_000;

/** A JSON-RPC id or progress token the SDK's schemas take: a string or an integer. */
const isRequestId = (value: unknown): value is string | number =>
  typeof value === "string" || Number.isSafeInteger(value);

/** The members a JSON-RPC 2.0 request has; a message with others goes to the SDK, which decides about them. */
const REQUEST_MEMBERS = new Set(["jsonrpc", "id", "method", "params"]);

/**
 * The one JSON-RPC `tools/call` request of a POST, when it is the plain kind both lanes take: a JSON body that is a
 * JSON-RPC 2.0 request and nothing more, a string or integer id, a tool name, arguments that are an object if
 * present, and no task or `input_required` retry.
 */
function plainToolsCall(req: Request): { body: Params; id: string | number; params: Params } | null {
  const body = req.body as unknown;
  if (!isPlainObject(body) || body.method !== "tools/call" || !isJsonContentType(req.headers["content-type"])) {
    return null;
  }
  const { id, params } = body;
  if (body.jsonrpc !== "2.0" || !isRequestId(id) || !isPlainObject(params)) return null;
  for (const member of Object.keys(body)) if (!REQUEST_MEMBERS.has(member)) return null;
  if (typeof params.name !== "string" || (params.arguments !== undefined && !isPlainObject(params.arguments))) {
    return null;
  }
  if ("task" in params || "requestState" in params || "inputResponses" in params) return null;
  return { body, id, params };
}

/**
 * Serves a fast-lane call on the plain HTTP exchange, as the SDK's per-request transport would: the result (or
 * the handler's JSON-RPC error) as JSON with status 200, or, once the call sends a notification, an SSE stream
 * carrying the notifications and then the response. A client that goes away cancels the call and gets nothing.
 */
export async function answerFastCall(res: Response, call: FastCall, caller: PerRequestCaller) {
  const control = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) control.abort(new Error("The client closed the request."));
  };
  res.on("close", onClose);
  const answer = jsonOrEventStream(res);
  const request: CallRequest = {
    signal: control.signal,
    ...(call.meta ? { _meta: call.meta } : {}),
    envelope: call.envelope,
    notify: async (notification: Notification) => {
      if (REMOVED_NOTIFICATIONS.has(notification.method)) {
        throw new Error(`Notification '${notification.method}' is not part of protocol revision ${REVISION}.`);
      }
      answer.send({ ...notification, jsonrpc: "2.0" });
    },
    requestState: () => undefined,
  };
  let response: Params;
  let status = 200;
  try {
    const result = await callToolPerRequest(caller, request, call.params);
    assertQuestionsDeclared(result, call.capabilities);
    const identity = caller.gateway.upstreamIdentity(await caller.session()) ?? GATEWAY_INFO;
    response = { result: encoded(result, identity), jsonrpc: "2.0", id: call.id };
  } catch (thrown) {
    response = errorResponse(call.id, thrown);
    // The SDK answers an undeclared capability, and headers that disagree with the body, with the validation
    // ladder's status.
    const code = (response.error as Params).code;
    if (code === ProtocolErrorCode.MissingRequiredClientCapability || code === HEADER_MISMATCH) status = 400;
  } finally {
    res.off("close", onClose);
  }
  // Aborted only when the client went away: nothing is written then.
  answer.end(response, status);
}

/**
 * A POST's answer as the SDK's transports give it: JSON, or an SSE stream from the first message sent before the
 * response (with keep-alive comments while it is open). `headers` go on either. Nothing is written once the client
 * has gone.
 */
function jsonOrEventStream(res: Response, headers: Record<string, string> = {}) {
  let keepAlive: NodeJS.Timeout | undefined;
  const open = () => !res.writableEnded && !res.destroyed;
  const frame = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
  const stream = () => {
    if (res.headersSent) return;
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    keepAlive = setInterval(() => open() && res.write(": keepalive\n\n"), KEEP_ALIVE_MS).unref();
  };
  return {
    /** A message before the response (a notification): opens the stream. */
    send(message: unknown): void {
      if (!open()) return;
      stream();
      res.write(frame(message));
    },
    /** Ends the answer with the response (JSON with `status` unless the stream is open), or with none (`null`). */
    end(response: Params | null, status = 200): void {
      clearInterval(keepAlive);
      if (!open()) return;
      if (response === null) {
        stream();
        res.end();
      } else if (res.headersSent) res.end(frame(response));
      else res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify(response));
    },
  };
}

/**
 * An input_required round asks only what the request's envelope declared the client can answer, as the SDK's
 * input-required seam checks: elicitation (form, or url in URL mode; a bare `elicitation: {}` counts as form),
 * sampling (with `tools` when the request uses tools) and roots.
 */
function assertQuestionsDeclared(result: Result, declared: ClientCapabilities | undefined): void {
  if (result.resultType !== "input_required" || !isPlainObject(result.inputRequests)) return;
  for (const [key, entry] of Object.entries(result.inputRequests)) {
    const question = entry as { method?: unknown; params?: Params };
    const required = requiredFor(question);
    if (!required) {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Handler for tools/call returned an input request '${key}' of kind '${String(question.method)}', which is not an embedded request the 2026-07-28 revision defines`,
      );
    }
    const missing = missingCapabilities(required, declared as Params | undefined);
    if (missing) {
      throw new MissingRequiredClientCapabilityError(
        { requiredCapabilities: missing },
        `Cannot request input '${key}' (${String(question.method)}): the request's client capabilities do not declare the required capability`,
      );
    }
  }
}

function requiredFor(question: { method?: unknown; params?: Params }): Params | undefined {
  switch (question.method) {
    case "elicitation/create":
      return { elicitation: question.params?.mode === "url" ? { url: {} } : { form: {} } };
    case "sampling/createMessage":
      return question.params?.tools !== undefined || question.params?.toolChoice !== undefined
        ? { sampling: { tools: {} } }
        : { sampling: {} };
    case "roots/list":
      return { roots: {} };
    default:
      return undefined;
  }
}

function missingCapabilities(required: Params, declared: Params | undefined): Params | undefined {
  const missing: Params = {};
  for (const [capability, requirement] of Object.entries(required)) {
    const given = declared?.[capability];
    if (given === undefined) {
      missing[capability] = requirement;
      continue;
    }
    if (!isPlainObject(requirement) || !isPlainObject(given)) continue;
    const members = Object.entries(requirement).filter(
      ([member]) =>
        given[member] === undefined && !(capability === "elicitation" && member === "form" && given.url === undefined),
    );
    if (members.length > 0) missing[capability] = Object.fromEntries(members);
  }
  return Object.keys(missing).length > 0 ? missing : undefined;
}

/**
 * A handler's error as the SDK's protocol layer answers it, in either era: its code (-32603 if it has none) and
 * message, and its data if any. Neither revision's encoder sends -32002 (resource not found): it goes as invalid
 * params.
 */
function errorResponse(id: string | number, thrown: unknown): Params {
  const error = protocolErrorOf(thrown) as { code?: unknown; message?: string; data?: unknown };
  const code = Number.isSafeInteger(error.code) ? (error.code as number) : ProtocolErrorCode.InternalError;
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: code === -32002 ? -32602 : code,
      message: error.message ?? "Internal error",
      ...(error.data !== undefined ? { data: error.data } : {}),
    },
  };
}

/**
 * The result as the SDK's server puts it on the 2026-07-28 wire: a tool result without content gets `content: []`,
 * `resultType` is `complete` unless the handler said otherwise (`input_required`), and `_meta` names the server
 * (`identity`: the session's, see sessionMcpServer) unless the result names one already.
 */
function encoded(result: Result, identity: Implementation): Params {
  let out: Params = result;
  const inputRequired = out.resultType !== undefined && out.resultType !== "complete";
  if (!inputRequired && out.content === undefined && !FOREIGN_RESULT_KEYS.some((key) => key in out)) {
    out = { ...out, content: [] };
  }
  if (out.resultType === undefined) out = { ...out, resultType: "complete" };
  return out._meta === undefined || isPlainObject(out._meta) ? withServerInfo(out, identity) : out;
}

/** The revisions of a 2025-era session whose tools/calls the session lane answers (or no MCP-Protocol-Version). */
const SESSION_REVISIONS = new Set(["2025-03-26", "2025-06-18", "2025-11-25"]);

/** A tools/call on a 2025-era session held by this process, which the session lane answers. */
export interface SessionCall {
  id: string | number;
  params: Params;
  /** The request's `_meta`, as the SDK hands it to its handler in these revisions (unchanged). */
  meta: Params | undefined;
}

/** A 2025-era session's connection, as the session lane serves tools/calls on it. */
export interface SessionLane {
  /** The connection's `Mcp-Session-Id`. */
  connectionId: string;
  /** The connection's tools/call, as its SDK handler serves it. */
  callOnConnection: (req: ConnectionRequest, params: Params) => Promise<Result>;
  /**
   * The requests under way on the connection, by JSON-RPC id (runningRequests.hold): the SDK's transport does not
   * know the lane's calls, so the client's `notifications/cancelled` (see Cancellations) and the connection's end
   * reach them here.
   */
  running: Map<string | number, AbortController>;
  /** What the client declared at initialize. */
  clientCapabilities(): ClientCapabilities | undefined;
}

/**
 * The request as a tools/call the session lane answers, or null when the SDK's transport should (with its own
 * checks and errors): the plain kind, with the headers that transport requires (an Accept of both JSON and SSE; a
 * 2025 revision or none), an id not already under way, and no progress token. A call that reports progress may
 * run long, and the SDK's stream is the one a client can resume. Nor when the client declared sampling,
 * elicitation or roots: an upstream's request for those goes out on the call's SSE stream, which the SDK's
 * transport owns.
 */
export function sessionCallOf(req: Request, lane: SessionLane): SessionCall | null {
  const plain = plainToolsCall(req);
  if (!plain) return null;
  const accept = req.headers.accept ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return null;
  const version = header(req, "mcp-protocol-version");
  if (version !== undefined && !SESSION_REVISIONS.has(version)) return null;
  const { id, params } = plain;
  const meta = params._meta;
  if (meta !== undefined && (!isPlainObject(meta) || meta.progressToken !== undefined)) return null;
  if (lane.running.has(id) || Object.keys(relayedCapabilities(lane.clientCapabilities())).length > 0) return null;
  return { id, params, meta: meta as Params | undefined };
}

/**
 * Serves a session-lane call: the response as JSON (MCP lets a server answer a POST with JSON or an SSE stream),
 * or an SSE stream from the first notification the call sends. As on the SDK's transport, a client that goes away
 * does not cancel the call (MCP 2025: only `notifications/cancelled` does), and a cancelled call gets no response.
 * Unlike the SDK's stream, one started here has no event ids: a client cut off from it cannot resume it (a call
 * with a progress token, the kind that runs long, stays on the SDK's). The result is not checked again against
 * the 2025 CallToolResult schema, as the SDK's server does: the upstream client has checked it in the upstream's
 * era already (and dropped what a content block does not define), so only a 2026-07-28 upstream's result that
 * its revision allows and 2025's does not would pass here where the SDK refuses it.
 */
export async function answerSessionCall(res: Response, call: SessionCall, lane: SessionLane) {
  const control = new AbortController();
  lane.running.set(call.id, control);
  const answer = jsonOrEventStream(res, { "mcp-session-id": lane.connectionId });
  const request: ConnectionRequest = {
    signal: control.signal,
    ...(call.meta ? { _meta: call.meta } : {}),
    notify: async (notification: Notification) => answer.send({ ...notification, jsonrpc: "2.0" }),
    requestState: () => undefined,
    // Never reached: the lane takes only clients that declared none of the capabilities these requests need.
    send: async (sent) => {
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${sent.method} cannot reach this client.`);
    },
  };
  let response: Params;
  try {
    response = { result: await lane.callOnConnection(request, call.params), jsonrpc: "2.0", id: call.id };
  } catch (thrown) {
    response = errorResponse(call.id, thrown);
  } finally {
    lane.running.delete(call.id);
  }
  // A cancelled call gets no response: its stream just ends.
  answer.end(control.signal.aborted ? null : response);
}

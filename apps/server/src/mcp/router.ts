import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from "@modelcontextprotocol/node";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type LoggingLevel,
  type McpServerFactory,
  type Transport,
} from "@modelcontextprotocol/server";
import { ApiError, checkJsonDepth } from "@toolplane/server-stubs";
import express, { type Request, type Response, Router } from "express";
import type { AppDeps } from "../app.ts";
import { ApiKeyVerifier } from "../auth/api-keys.ts";
import type { Row } from "../db/schema.ts";
import { sendError, sendJson } from "../http/errors.ts";
import { newId } from "../lib/ids.ts";
import { tracing } from "../observability/tracing.ts";
import { gatewaySessionLoader } from "../resources/sessions/gateway-view.ts";
import { answerFastCall, answerSessionCall, fastCallOf, type SessionLane, sessionCallOf } from "./fast-call.ts";
import { Gateway } from "./gateway.ts";
import type { GatewaySession, LoadGatewaySession } from "./gateway-session.ts";
import { SessionSubscriptions } from "./listen.ts";
import { asLogLevel, ConnectionLogLevels } from "./log-levels.ts";
import { ReplayBuffer, replayLimit } from "./replay-buffer.ts";
import { Cancellations, runningRequests } from "./running-requests.ts";
import { type GatewayServer, type ServingContext, sessionMcpServer } from "./server.ts";
import { SESSION_LIST_CHANGES, SessionListWatchers } from "./session-changes.ts";

const API_KEY_PREFIX = "tp_";
const sha256 = (s: string) => createHash("sha256").update(s).digest();

/**
 * Who may use a session's MCP endpoint: a bearer API key of the session's instance (a key of another instance sees
 * a 404, as for any id of another tenant) or the session's own secret (compared by SHA-256 in constant time; a
 * wrong one is a 401). The credential comes in `Authorization: Bearer` or, for clients that cannot set headers,
 * as `?key=`. A session that does not exist or was deleted is a 404; an archived one is a 410.
 */
export class SessionAccess {
  private readonly keys: ApiKeyVerifier;

  constructor(
    deps: Pick<AppDeps, "db">,
    private readonly load: LoadGatewaySession,
  ) {
    this.keys = new ApiKeyVerifier(deps.db);
  }

  async authorize(sessionId: string, token: string | null): Promise<GatewaySession> {
    if (!token) {
      throw new ApiError("unauthorized", "Send Authorization: Bearer <session secret or API key>, or ?key=<secret>.");
    }
    const instanceId = token.startsWith(API_KEY_PREFIX) ? (await this.keys.verify(`Bearer ${token}`)).instanceId : null;
    const session = await this.load(sessionId);
    if (!session || (instanceId !== null && session.instanceId !== instanceId) || session.status === "deleted") {
      throw ApiError.notFound("session", sessionId);
    }
    const expected = Buffer.from(session.secretHash, "hex");
    const given = sha256(token);
    if (instanceId === null && (given.length !== expected.length || !timingSafeEqual(given, expected))) {
      throw new ApiError("unauthorized", "The session secret is not valid for this session.");
    }
    if (session.status !== "active") {
      throw new ApiError("gone", `Session ${sessionId} is ${session.status}; only active sessions are served.`, {
        entity: "session",
      });
    }
    return session;
  }
}

/** The credential of a request: `Authorization: Bearer …`, else the `key` query parameter. */
function credentialOf(req: Request): string | null {
  return bearerOf(req) ?? queryKeyOf(req);
}

const bearerOf = (req: Request) => /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
const queryKeyOf = (req: Request) => new URL(req.originalUrl, "http://localhost").searchParams.get("key") || null;

/**
 * Origins allowed to call the MCP endpoint from a browser (MCP requires servers to validate `Origin` against DNS
 * rebinding): this server's public origin and TOOLPLANE_ALLOWED_ORIGINS (comma-separated, `*` for any). Requests
 * without `Origin` (every non-browser client) are not affected.
 */
function originGuard(publicUrl: string) {
  const allowed = new Set([new URL(publicUrl).origin]);
  for (const origin of (process.env.TOOLPLANE_ALLOWED_ORIGINS ?? "").split(",")) {
    if (origin.trim()) allowed.add(origin.trim().replace(/\/+$/, ""));
  }
  return (req: Request) => {
    const origin = req.headers.origin;
    if (origin === undefined || allowed.has("*") || allowed.has(origin)) return;
    throw new ApiError("forbidden", `Origin ${origin} may not use this MCP endpoint.`, {
      hint: "Add the origin to TOOLPLANE_ALLOWED_ORIGINS to let a browser-based client connect.",
    });
  };
}

/**
 * How long a 2025-11-25 client whose SSE answer broke waits before it reconnects with Last-Event-ID (the `retry` of
 * the answer's priming event, SEP-1699): the SDK client's own first reconnection delay.
 */
const RECONNECT_MS = 1_000;

/** What a per-request MCP request carries to its server (in `authInfo.extra`), and what the server says back. */
interface PerRequestExtra {
  session: GatewaySession;
  serving: ServingContext;
  method?: string;
  /** Set when the request failed with MethodNotFound in 2026-07-28 (an HTTP 404 then). */
  methodNotFound?: boolean;
}

/** What a replica reads of a 2025-era connection (held anywhere) to serve one of its requests. */
type StoredConnection = Pick<Row<"mcp_connections">, "protocol_version" | "client_capabilities" | "log_level">;

/** A connection of a 2025-era client (Streamable HTTP session or legacy SSE stream) served by this process. */
interface Connection {
  sessionId: string;
  transport: NodeStreamableHTTPServerTransport | SSEServerTransport;
  /** How the fast lane serves tools/calls on a Streamable HTTP session. */
  lane?: SessionLane;
  lastUsedAt: number;
}

/**
 * A request of the 2026-07-28 revision or a later one, by its `MCP-Protocol-Version` header (revisions are dates;
 * the SDK refuses a request whose header and envelope disagree).
 */
const isModernRequest = (req: Request) => {
  const version = req.headers["mcp-protocol-version"];
  return typeof version === "string" && version.trim() >= "2026-07-28";
};

const connectionIdleMs = () => Number(process.env.TOOLPLANE_MCP_CONNECTION_IDLE_MS) || 30 * 60_000;

/**
 * The 2025-era connections this process holds. A Streamable HTTP session that no request used for
 * TOOLPLANE_MCP_CONNECTION_IDLE_MS (default 30 min) is closed (clients often never send DELETE; a client that comes
 * back gets a 404 and initialises again, as MCP prescribes); an SSE stream lives as long as its HTTP response.
 */
class LocalConnections {
  private readonly byId = new Map<string, Connection>();
  private readonly idleMs = connectionIdleMs();
  private sweeper: NodeJS.Timeout | null = null;

  get(id: string): Connection | undefined {
    const connection = this.byId.get(id);
    if (connection) connection.lastUsedAt = Date.now();
    return connection;
  }

  set(id: string, connection: Omit<Connection, "lastUsedAt">): void {
    this.byId.set(id, { ...connection, lastUsedAt: Date.now() });
    this.sweeper ??= setInterval(() => this.closeIdle(), Math.min(this.idleMs, 60_000)).unref();
  }

  delete(id: string): void {
    this.byId.delete(id);
  }

  /** Ends a connection held here (its stored row is gone: no replica serves it any more). */
  close(id: string): void {
    const connection = this.byId.get(id);
    this.byId.delete(id);
    void connection?.transport.close().catch(() => undefined);
  }

  private closeIdle(): void {
    const now = Date.now();
    for (const [id, { transport, lastUsedAt }] of this.byId) {
      if (transport instanceof SSEServerTransport || now - lastUsedAt < this.idleMs) continue;
      this.byId.delete(id);
      void transport.close().catch(() => undefined);
    }
  }
}

/**
 * When the stored 2025-era connections were last used, on whichever replica served them: written at most once a
 * minute (a quarter of the idle time, if shorter) per connection and process (a write per request would cost every MCP request a database round trip);
 * connections no replica used for TOOLPLANE_MCP_CONNECTION_IDLE_MS are deleted by every process's sweep.
 */
class StoredConnections {
  private readonly touched = new Map<string, number>();
  private readonly idleMs = connectionIdleMs();

  constructor(
    private readonly db: AppDeps["db"],
    private readonly onExpired: (connectionId: string) => void,
  ) {
    setInterval(() => void this.sweep().catch(() => undefined), Math.min(this.idleMs, 60_000)).unref();
  }

  touch(connectionId: string): void {
    const now = Date.now();
    if (now - (this.touched.get(connectionId) ?? 0) < Math.min(60_000, this.idleMs / 4)) return;
    this.touched.set(connectionId, now);
    void this.db
      .updateTable("mcp_connections")
      .set({ last_used_at: new Date(now) })
      .where("id", "=", connectionId)
      .execute()
      .catch(() => undefined);
  }

  async sweep(): Promise<void> {
    const cutoff = new Date(Date.now() - this.idleMs);
    for (const [id, at] of this.touched) if (at < cutoff.getTime()) this.touched.delete(id);
    const expired = await this.db
      .deleteFrom("mcp_connections")
      .where("last_used_at", "<", cutoff)
      .returning("id")
      .execute();
    for (const { id } of expired) this.onExpired(id);
  }
}

/**
 * The MCP endpoint behind every session's `connection_url`, for both protocol eras:
 * - `POST /mcp/:sessionId` — MCP 2026-07-28 requests (stateless, `_meta` per request, `server/discover`): each is
 *   served by a server built for it from the database, so any replica serves any request. 2025-era clients
 *   `initialize` a Streamable HTTP session (`Mcp-Session-Id` `scn_…`) whose later POSTs, GET stream and DELETE
 *   reach the process that holds it; a 2025-era request without a session is served statelessly.
 * - `GET /mcp/:sessionId/sse` + `POST /mcp/:sessionId/messages?sessionId=…` — the legacy HTTP+SSE transport.
 * Both connection kinds live in the process that opened them (sticky routing, see README).
 * Unauthenticated requests get a 401 with `WWW-Authenticate` pointing at the RFC 9728 metadata served here.
 *
 * `servePost` serves `POST /mcp/:sessionId` as the router does, for requests taken before Express dispatches them
 * (see app.ts): the same body parser, handler and errors.
 */
export function mcpGatewayRouter(deps: AppDeps): {
  router: Router;
  servePost: (req: IncomingMessage, res: ServerResponse, sessionId: string) => void;
} {
  const load = gatewaySessionLoader(deps.db, deps.secrets, deps.changes);
  const gateway = new Gateway(deps.db, deps.secrets, deps.publicUrl, load);
  const access = new SessionAccess(deps, load);
  const checkOrigin = originGuard(deps.publicUrl);
  const connections = new LocalConnections();
  const stored = new StoredConnections(deps.db, (id) => connections.close(id));
  const cancellations = new Cancellations(deps.db, deps.changes);
  const logLevels = new ConnectionLogLevels(deps.db, deps.changes);
  const router = Router();
  const sessionIdOf = (req: Request) => String(req.params.sessionId);
  const metadataUrl = (sessionId: string) => `${deps.publicUrl}/.well-known/oauth-protected-resource/mcp/${sessionId}`;

  const authorize = async (req: Request, res: Response): Promise<GatewaySession> => {
    checkOrigin(req);
    try {
      return await access.authorize(sessionIdOf(req), credentialOf(req));
    } catch (error) {
      if (error instanceof ApiError && error.code === "unauthorized") {
        res.setHeader("WWW-Authenticate", `Bearer resource_metadata="${metadataUrl(sessionIdOf(req))}"`);
      }
      throw error;
    }
  };
  /** How a request is served. Its logger is read only when something logs (building one costs every request). */
  const servingFor = (req: Request, connectionId: string | null, canRequest: boolean): ServingContext => ({
    connectionId,
    canRequest,
    get log() {
      return req.log;
    },
  });
  /** How a request of a connection another replica holds is served: as its client declared and set it there. */
  const servingStored = (req: Request, connectionId: string, sessionId: string, stored: StoredConnection) => {
    const serving = servingFor(req, connectionId, false);
    const logLevel = asLogLevel(stored.log_level);
    return Object.assign(serving, {
      clientCapabilities: stored.client_capabilities,
      ...(logLevel ? { logLevel } : {}),
      storeLogLevel: (level: LoggingLevel) => logLevels.store(connectionId, sessionId, level),
    });
  };

  // RFC 9728: what protects a session's endpoint. Its credential is the session secret handed out by the API (or an
  // API key), so no authorization server is named; clients learn that a bearer token goes in the header.
  router.get("/.well-known/oauth-protected-resource/mcp/:sessionId", (req, res) => {
    res.json({
      resource: `${deps.publicUrl}/mcp/${sessionIdOf(req)}`,
      authorization_servers: [],
      bearer_methods_supported: ["header"],
      resource_name: "Toolplane session",
      resource_documentation: `${deps.publicUrl}/docs`,
    });
  });

  // One handler for every 2026-07-28 request (and stateless 2025 ones): the session travels in authInfo.
  const perRequestServer: McpServerFactory = async ({ authInfo }) => {
    const extra = authInfo?.extra as unknown as PerRequestExtra;
    const server = await sessionMcpServer(gateway, async () => extra.session, extra.serving, {
      instructions: extra.method === "server/discover" || extra.method === "initialize",
    });
    server.onMethodNotFound = () => {
      extra.methodNotFound = true;
    };
    return server;
  };
  const onerror = (error: Error) => deps.logger.warn({ err: error.message }, "MCP request failed");
  const perRequestHandler = createMcpHandler(perRequestServer, { onerror });
  // MCP 2026-07-28 answers MethodNotFound with HTTP 404 (see GatewayServer.onMethodNotFound); a JSON answer is
  // still open to that, an SSE stream already under way is not.
  const perRequestNode = toNodeHandler({
    fetch: async (request, options) => {
      const response = await perRequestHandler.fetch(request, options);
      const notFound = (options?.authInfo?.extra as Partial<PerRequestExtra> | undefined)?.methodNotFound === true;
      const json = response.headers.get("content-type")?.startsWith("application/json") === true;
      return notFound && json && response.status === 200
        ? new Response(response.body, { status: 404, headers: response.headers })
        : response;
    },
  });
  // subscriptions/listen streams are served per session, each with the change events of its own upstreams.
  const listWatchers = new SessionListWatchers(deps.changes);
  /** Announces the lists of `session` changed when it does (see SessionListWatchers), until stopped. */
  const watchLists = (session: GatewaySession, announce: (now: GatewaySession) => void) =>
    listWatchers.watch(session, () => load(session.id), announce);
  const subscriptions = new SessionSubscriptions(gateway, perRequestServer, onerror, watchLists);
  /** The session's own changes reach a 2025 client on its connection, as its upstreams' list changes do. */
  const watchConnection = (session: GatewaySession, server: GatewayServer) =>
    watchLists(session, () => {
      for (const method of SESSION_LIST_CHANGES) void server.notification({ method } as never).catch(() => undefined);
    });
  const jsonBody = express.json({ limit: deps.bodyLimitBytes, type: () => true });
  // The fast lanes answer plain tools/calls without the SDK's transports: 2026-07-28 ones without building an SDK
  // server per request, and those on a 2025 session held here without its Streamable HTTP transport and dispatch.
  // TOOLPLANE_MCP_FAST_CALLS=0 sends them through the SDK like every other request (read per request, so an
  // operator's switch and a side-by-side comparison need no restart).
  const fastCalls = () => process.env.TOOLPLANE_MCP_FAST_CALLS !== "0";

  router.post("/mcp/:sessionId", jsonBody, (req, res) => servePostBody(req, res));
  async function servePostBody(req: Request, res: Response) {
    const session = await authorize(req, res);
    checkJsonDepth(req.body);
    const connectionId = req.headers["mcp-session-id"];
    if (typeof connectionId === "string") stored.touch(connectionId);
    // A cancellation of a connection of this session: the request it names may run on any replica (its client's
    // requests land on any of them). Announced once the connection is known to be the session's.
    const cancelling = Array.isArray(req.body) || req.body?.method === "notifications/cancelled";
    const local = typeof connectionId === "string" ? connections.get(connectionId) : undefined;
    if (local && local.sessionId === session.id && local.transport instanceof NodeStreamableHTTPServerTransport) {
      if (cancelling) announceCancellation(req, String(connectionId));
      const lane = local.lane;
      const call = lane && fastCalls() && !tracing() ? sessionCallOf(req, lane) : null;
      if (lane && call) await answerSessionCall(res, call, lane);
      else await local.transport.handleRequest(req, res, req.body);
    } else if (typeof connectionId === "string") {
      // Initialised on another replica: served here request by request, as the client declared at initialize.
      const stored = await loadConnection(connectionId, session.id);
      if (!stored) return sessionNotFound(res);
      if (cancelling) announceCancellation(req, connectionId);
      await servePerRequest(req, res, session, servingStored(req, connectionId, session.id, stored));
    } else if (
      // The method is checked first: the schema check of every request was ~1.4 % of a 2026-07-28 call's CPU.
      req.body?.method === "initialize" &&
      isInitializeRequest(req.body) &&
      (await isLegacyRequest(await toWebRequest(req, req.body)))
    ) {
      await openSession(req, res, session);
    } else {
      const serving = servingFor(req, null, false);
      if (isModernRequest(req)) serving.paramHeaders = req.headers;
      await servePerRequest(req, res, session, serving);
    }
    touched(session, 1);
  }
  /** Cancels what the request's `notifications/cancelled` names, here and on the other processes (see Cancellations). */
  function announceCancellation(req: Request, connectionId: string) {
    cancellations.announce(connectionId, req.body, (error) => {
      req.log.warn({ err: error }, "a cancellation did not reach the other server processes");
    });
  }
  // GET opens the stream of a 2025-era MCP session, DELETE ends it; both go to the process that holds it.
  router.get("/mcp/:sessionId", async (req, res) => {
    const session = await authorize(req, res);
    const connectionId = sessionHeader(req, res, "GET opens the stream of a 2025-era MCP session");
    const local = localConnection(connectionId, session.id);
    if (local) return local.handleRequest(req, res);
    if (!(await loadConnection(connectionId, session.id))) return sessionNotFound(res);
    // Held by another replica: this one offers no stream (a client goes on without one, as MCP allows).
    res.setHeader("Allow", "POST, DELETE");
    throw new ApiError("method_not_allowed", "This MCP session's stream is served by another server process.", {
      hint: "Route a session's GET stream to the process that answered its initialize (sticky routing).",
    });
  });
  router.delete("/mcp/:sessionId", async (req, res) => {
    const session = await authorize(req, res);
    const connectionId = sessionHeader(req, res, "DELETE ends a 2025-era MCP session");
    const local = localConnection(connectionId, session.id);
    if (local) return local.handleRequest(req, res);
    const deleted = await deps.db
      .deleteFrom("mcp_connections")
      .where("id", "=", connectionId)
      .where("session_id", "=", session.id)
      .executeTakeFirst();
    if (deleted.numDeletedRows === 0n) return sessionNotFound(res);
    res.status(200).end();
  });
  router.all("/mcp/:sessionId", async (req, res) => {
    await authorize(req, res);
    res.setHeader("Allow", "GET, POST, DELETE");
    throw new ApiError("method_not_allowed", `${req.method} is not part of MCP's Streamable HTTP transport.`);
  });

  /**
   * Counts a served request on its session (and marks the session connected). Not awaited: the client has its
   * answer, and the activity write waits up to 200 ms to gather others; a handler waiting for it kept its request
   * and response alive that long. A write that fails is logged.
   */
  function touched(session: GatewaySession, messages: number): void {
    gateway.touch(session.id, messages, true).catch((error: unknown) => {
      deps.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        "session activity not recorded",
      );
    });
  }

  function sessionHeader(req: Request, res: Response, what: string): string {
    const connectionId = req.headers["mcp-session-id"];
    if (typeof connectionId === "string") return connectionId;
    res.setHeader("Allow", "POST");
    throw new ApiError("method_not_allowed", `${what}: send its Mcp-Session-Id (2026-07-28 clients only POST).`);
  }

  function localConnection(connectionId: string, sessionId: string): NodeStreamableHTTPServerTransport | null {
    const local = connections.get(connectionId);
    return local?.sessionId === sessionId && local.transport instanceof NodeStreamableHTTPServerTransport
      ? local.transport
      : null;
  }

  /** An MCP session id no replica knows (or of another session): 404, which tells the client to initialise again. */
  function sessionNotFound(res: ServerResponse) {
    sendJson(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "MCP session not found" }, id: null });
  }

  function loadConnection(connectionId: string, sessionId: string): Promise<StoredConnection | undefined> {
    return deps.db
      .selectFrom("mcp_connections")
      .select(["protocol_version", "client_capabilities", "log_level"])
      .where("id", "=", connectionId)
      .where("session_id", "=", sessionId)
      .executeTakeFirst();
  }

  async function servePerRequest(req: Request, res: Response, session: GatewaySession, serving: ServingContext) {
    const call = fastCalls() && !tracing() ? fastCallOf(req) : null;
    if (call) {
      const capabilities = serving.clientCapabilities ?? call.capabilities;
      return answerFastCall(res, call, { gateway, session: async () => session, serving, capabilities });
    }
    const method = typeof req.body?.method === "string" ? req.body.method : undefined;
    // The SDK's server would answer a refusal of the tool's handler in-band (HTTP 200); SEP-2243 requires a 400.
    const refusal = method === "tools/call" && serving.paramHeaders ? await paramHeaderRefusal(req, session) : null;
    if (refusal) {
      sendJson(res, 400, {
        jsonrpc: "2.0",
        id: req.body.id ?? null,
        error: { code: refusal.code, message: refusal.message },
      });
      return;
    }
    (req as { auth?: unknown }).auth = {
      token: "",
      clientId: session.id,
      scopes: [],
      extra: { session, serving, method },
    };
    if (method === "subscriptions/listen") await subscriptions.serve(req, res, session);
    else await perRequestNode(req, res, req.body);
  }

  /**
   * A 2026-07-28 tools/call whose `Mcp-Param-*` headers disagree with its arguments, as the gateway refuses it; the
   * tool is found with the capabilities its envelope declares, so the upstream connection is the call's own.
   */
  async function paramHeaderRefusal(req: Request, session: GatewaySession) {
    const params = req.body?.params as { name?: unknown; arguments?: unknown; _meta?: Record<string, unknown> };
    if (typeof params?.name !== "string") return undefined;
    const capabilities = params._meta?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
    return gateway.paramHeaderRefusal(session, params.name, params.arguments, req.headers, {
      ...(capabilities ? { capabilities } : {}),
    });
  }

  async function openSession(req: Request, res: Response, session: GatewaySession) {
    const sessionId = session.id;
    const credential = credentialOf(req);
    const current = () => access.authorize(sessionId, credential);
    // Stored before initialize is answered, so the client's next request may reach any replica. It is written
    // here, before the SDK's transport runs: a failure inside the transport's session callback is answered as
    // "400 Parse error" (its catch-all; a database that timed out under load showed up that way), while here it
    // takes the one error path (503 when the database is unavailable).
    const connectionId = newId("scn");
    const params = (req.body as { params: Record<string, unknown> }).params;
    await deps.db
      .insertInto("mcp_connections")
      .values({
        id: connectionId,
        session_id: sessionId,
        protocol_version: String(params.protocolVersion),
        client_capabilities: JSON.stringify(params.capabilities ?? {}),
        client_info: params.clientInfo ? JSON.stringify(params.clientInfo) : null,
      })
      .execute();
    let lane: SessionLane | undefined;
    const transport = new NodeStreamableHTTPServerTransport({
      // A client whose stream broke reconnects with Last-Event-ID and gets what it missed: each SSE answer opens
      // with a priming event (its id, and the reconnection delay as `retry`, SEP-1699) for 2025-11-25 clients.
      ...(replayLimit() > 0 ? { eventStore: new ReplayBuffer(), retryInterval: RECONNECT_MS } : {}),
      sessionIdGenerator: () => connectionId,
      onsessioninitialized: (id) => {
        connections.set(id, { sessionId, transport, ...(lane ? { lane } : {}) });
      },
      onsessionclosed: async (id) => {
        connections.delete(id);
        await deps.db.deleteFrom("mcp_connections").where("id", "=", id).execute();
      },
    });
    // Calls made on this connection record it.
    const serving = servingFor(req, connectionId, true);
    serving.storeLogLevel = (level) => logLevels.store(connectionId, sessionId, level);
    let release: () => void = () => undefined;
    let unwatch: () => void = () => undefined;
    try {
      const server = await sessionMcpServer(gateway, current, serving, { instructions: true });
      // The level its client sets on another replica (where its requests may land) applies to this connection too.
      release = logLevels.hold(connectionId, (level) => {
        server
          .applyLogLevel?.(level)
          .catch((error: unknown) => deps.logger.warn({ err: error }, "log level not applied"));
      });
      unwatch = watchConnection(session, server);
      const { callOnConnection } = server;
      if (callOnConnection) {
        const clientCapabilities = () => server.getClientCapabilities();
        lane = { connectionId, callOnConnection, running: runningRequests.hold(connectionId), clientCapabilities };
      }
      transport.onclose = () => {
        connections.delete(connectionId);
        // As the SDK's server does with the requests it runs, the lane's calls end with the connection.
        for (const call of lane?.running.values() ?? []) call.abort(new Error("The MCP session was closed."));
        runningRequests.drop(connectionId);
        release();
        unwatch();
        void server.close();
      };
      await server.connect(transport as Transport);
      await transport.handleRequest(req, res, req.body);
    } finally {
      // No session was opened (the transport refused this initialize, or building its server failed): no row stays.
      if (transport.sessionId === undefined) {
        runningRequests.drop(connectionId);
        release();
        unwatch();
        await deps.db.deleteFrom("mcp_connections").where("id", "=", connectionId).execute();
      }
    }
  }

  router.get("/mcp/:sessionId/sse", async (req, res) => {
    const sessionId = sessionIdOf(req);
    const session = await authorize(req, res);
    const credential = credentialOf(req);
    // A client that sent the secret as `?key=` cannot set headers: the endpoint it is told to post to carries the
    // key too (to it alone, on its own stream; request logs mask `key`).
    const key = bearerOf(req) ? null : queryKeyOf(req);
    const endpoint = `/mcp/${sessionId}/messages${key ? `?key=${encodeURIComponent(key)}` : ""}`;
    const transport = new SSEServerTransport(endpoint, res);
    const current = () => access.authorize(sessionId, credential);
    const serving = servingFor(req, newId("scn"), true);
    const server = await sessionMcpServer(gateway, current, serving, { instructions: true });
    connections.set(transport.sessionId, { sessionId, transport });
    const unwatch = watchConnection(session, server);
    res.on("close", () => {
      connections.delete(transport.sessionId);
      unwatch();
      void server.close();
    });
    await server.connect(transport as unknown as Transport);
    touched(session, 0);
  });
  // Parsed here (not by the SDK) to bound its nesting as on the Streamable HTTP endpoint.
  router.post("/mcp/:sessionId/messages", jsonBody, async (req, res) => {
    const sessionId = sessionIdOf(req);
    const session = await authorize(req, res);
    checkJsonDepth(req.body);
    const streamId = new URL(req.originalUrl, "http://localhost").searchParams.get("sessionId") ?? "";
    const stream = connections.get(streamId);
    if (!stream || stream.sessionId !== sessionId || !(stream.transport instanceof SSEServerTransport)) {
      throw new ApiError("not_found", "No open SSE stream of this session has that sessionId on this server.", {
        entity: "mcp_stream",
      });
    }
    await stream.transport.handlePostMessage(req, res, req.body);
    touched(session, 1);
  });

  /** Serves a POST of `sessionPostOf` as the route above does. */
  function servePost(req: IncomingMessage, res: ServerResponse, sessionId: string): void {
    const request = Object.assign(req, { params: { sessionId } }) as unknown as Request;
    jsonBody(request, res as Response, (error?: unknown) => {
      if (error) return sendError(error, req, res);
      servePostBody(request, res as Response).catch((thrown: unknown) => sendError(thrown, req, res));
    });
  }

  return { router, servePost };
}

/** The path of a session's MCP endpoint as issued (`connection_url`): the session id, percent-encoding-free. */
const SESSION_POST_PATH = /^\/mcp\/([A-Za-z0-9_-]+)$/;

/**
 * The session id of `POST /mcp/<session id>` spelled as issued (no query string, no percent-encoding; any other
 * spelling goes through Express, whose route matches it too), else undefined.
 */
export const sessionPostOf = (req: IncomingMessage): string | undefined =>
  req.method === "POST" ? SESSION_POST_PATH.exec(req.url ?? "")?.[1] : undefined;

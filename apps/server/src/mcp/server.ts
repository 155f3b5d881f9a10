import { setTimeout as sleep } from "node:timers/promises";
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  type ClientCapabilities,
  type Implementation,
  type JSONRPCRequest,
  LOG_LEVEL_META_KEY,
  type LoggingLevel,
  MissingRequiredClientCapabilityError,
  type Notification,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type Result,
  SERVER_INFO_META_KEY,
  type Server,
  type ServerCapabilities,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { SKILLS_LIST_METHOD } from "@modelcontextprotocol/server/ext/skills";
import type { Logger } from "pino";
import { linkedAbortController } from "../lib/abort-signal-any.ts";
import { isDatabaseUnavailable } from "../lib/db-errors.ts";
import { cacheFields } from "../lib/freshness.ts";
import { TracedServer } from "../observability/tracing.ts";
import {
  clientAnswerMs,
  LISTS,
  type ListMethod,
  LOG_LEVELS,
  RELAYED_REQUESTS,
  type Upstream,
  type UpstreamCaller,
  UpstreamFailure,
  unchecked,
} from "../runtimes/pool.ts";
import { Continuation, Continuations } from "./continuations.ts";
import {
  type CallOptions,
  type CallOrigin,
  type CallOutcome,
  type Described,
  type Downstream,
  FirstAnswer,
  type Gateway,
  type ProviderFailure,
  ReauthenticationNeeded,
  type TaskSeen,
  taskSeenOf,
} from "./gateway.ts";
import type { GatewaySession, GatewaySessionProvider } from "./gateway-session.ts";
import type { Namespaces } from "./keys.ts";
import { asLogLevel } from "./log-levels.ts";
import { withoutMetaKey } from "./meta.ts";
import { answeredRound, roundState } from "./rounds.ts";
import { runningRequests } from "./running-requests.ts";
import { exposeSkillResult, listSkills, type SendToProvider, SKILL_URI_METHODS, skillRefusal } from "./skills.ts";
import {
  coreTask,
  coreTaskOutcome,
  coreTasksViaExtension,
  coreTaskTool,
  declaresTasksExtension,
  declaringTasksExtension,
  extensionsOffered,
  extensionTask,
  heldTask,
  LEGACY_ENDED,
  legacyTaskOutcome,
  TASKS_EXTENSION,
  TERMINAL_TASK_STATUSES,
  tasksOffered,
} from "./task-eras.ts";

type Params = Record<string, unknown>;

/** How the client reaches this server: per request (2026-07-28, stateless 2025) or over a connection. */
export interface ServingContext {
  /** The MCP connection (`scn_…`) of a 2025 session or legacy SSE stream, recorded on tool calls; null per request. */
  connectionId: string | null;
  /** Whether server→client requests can reach the client (a 2025 session or SSE stream with its open stream). */
  canRequest: boolean;
  /** The request's logger; a getter where possible, since building it costs every request something. */
  log: Logger;
  /** What the client declared at `initialize`, when that happened on another replica. */
  clientCapabilities?: ClientCapabilities;
  /** The log level the client set on its connection, when another replica holds it (see ConnectionLogLevels). */
  logLevel?: LoggingLevel;
  /** Keeps the level a client sets with `logging/setLevel` for its connection's requests on every replica. */
  storeLogLevel?: (level: LoggingLevel) => Promise<void>;
  /**
   * A 2026-07-28 request's headers: its `Mcp-Param-*` headers must agree with the arguments (SEP-2243), as a
   * direct server checks them. Unset in the 2025 revisions, which have no such headers.
   */
  paramHeaders?: Record<string, string | string[] | undefined>;
}

/** The gateway's identity, stamped on every result it sends a 2026-07-28 client. */
export const GATEWAY_INFO = { name: "toolplane-gateway", version: "0.1.0" };
const BASE_INSTRUCTIONS =
  "One MCP server for every provider of this Toolplane session. With several providers, tool and prompt names " +
  "start with the provider's slug and resource URIs with `<slug>+`.";
/** `_meta` keys that describe the client's own request envelope: the gateway's upstream client sets its own. */
const ENVELOPE_KEYS = new Set([
  "progressToken",
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
]);

/**
 * The SDK's server with two gateway rules on every handler:
 * - it checks every tools/call result against CallToolResult, which has no room for the result of a task-augmented
 *   call (`{ task }`, MCP 2025-11-25), and gives a result without `content` an empty one, which a CreateTaskResult
 *   of the Tasks extension (`resultType: "task"`, SEP-2663) does not have: both are passed on as the upstream gave
 *   them;
 * - a database that cannot be reached is said so in MCP terms (the HTTP API answers 503), never with the driver's
 *   own message.
 */
export class GatewayServer extends TracedServer {
  /**
   * A tools/call on this server's connection, as its SDK handler serves it: what the fast lane for 2025 sessions
   * (fast-call.ts) calls without the SDK's transport and dispatch. Set on servers of connections (canRequest).
   */
  callOnConnection?: (req: ConnectionRequest, params: Params) => Promise<Result>;
  /**
   * The 2025-era connection (`Mcp-Session-Id`) this server serves requests of, held here or elsewhere: each request
   * runs registered in runningRequests, so that its client's `notifications/cancelled` reaches it from any replica.
   */
  connectionId: string | null = null;
  /**
   * Gives this connection's client the log level it set on another replica, as its logging/setLevel would here.
   * Set on servers of connections (canRequest).
   */
  applyLogLevel?: (level: LoggingLevel) => Promise<void>;
  /**
   * Told when a 2026-07-28 request failed with MethodNotFound (-32601), which that revision answers with HTTP 404
   * (basic/transports, SEP-2575): the SDK gives the 404 only to a method it refuses before dispatch, not to one a
   * handler refuses (no provider owns it) or an upstream refused. Set on per-request servers (router.ts).
   */
  onMethodNotFound?: () => void;
  /**
   * The identity a 2026-07-28 result gives as its server's (`_meta` serverInfo), when it is not the server's own
   * (see sessionMcpServer): looked up when the result is ready, so the first request that reaches the upstream
   * already names it.
   */
  identity?: () => Promise<Implementation | undefined>;

  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method === "initialize") {
      const initialize = super._wrapHandler(method, handler);
      return this.connectionHandler(async (request, ctx) => legacyInitializeResult(await initialize(request, ctx)));
    }
    if (method !== "tools/call") return this.connectionHandler(super._wrapHandler(method, handler));
    // A CreateTaskResult passes the SDK's checks (it has room for more members) but not unchanged: the handler's
    // own is answered, found by the request's signal, which the SDK hands on to the handler.
    const createdTasks = new WeakMap<AbortSignal, Result>();
    const wrapped = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      if (result.resultType === "task") createdTasks.set(ctx.mcpReq.signal, result);
      return result;
    });
    // (The SDK's isTaskAugmentedRequestParams accepts any params: its `task` member is optional.)
    return this.connectionHandler(async (request, ctx) => {
      if (request.params?.task !== undefined) return handler(request, ctx);
      const result = await wrapped(request, ctx);
      return createdTasks.get(ctx.mcpReq.signal) ?? result;
    });
  }

  /**
   * A handler that runs registered on this server's connection (see connectionId), a database outage said in MCP
   * terms, a 2026-07-28 MethodNotFound told (see onMethodNotFound). Every handler is one, the fallback's included.
   */
  connectionHandler(
    serve: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const registered = (request: JSONRPCRequest, ctx: ServerContext) => {
      const connectionId = this.connectionId;
      if (connectionId === null) return serve(request, ctx);
      const { controller, unlink } = linkedAbortController(ctx.mcpReq.signal);
      const release = runningRequests.add(connectionId, ctx.mcpReq.id, controller);
      return serve(request, { ...ctx, mcpReq: { ...ctx.mcpReq, signal: controller.signal } }).finally(() => {
        unlink();
        release();
      });
    };
    return (request, ctx) =>
      registered(request, ctx).then(
        (result) => this.withIdentity(result, ctx),
        (error: unknown) => {
          const code = (error as { code?: unknown }).code;
          if (code === ProtocolErrorCode.MethodNotFound && ctx.mcpReq.envelope !== undefined) this.onMethodNotFound?.();
          throw protocolErrorOf(error);
        },
      );
  }

  /** A 2026-07-28 result named as `identity` says (the SDK names the server's own on a result that names none). */
  private async withIdentity(result: Result, ctx: ServerContext): Promise<Result> {
    if (ctx.mcpReq.envelope === undefined || !this.identity) return result;
    const identity = await this.identity();
    return identity ? withServerInfo(result, identity) : result;
  }
}

/** `result` naming `identity` as its server (`_meta` serverInfo), unless it names one already. */
export function withServerInfo(result: Result, identity: Implementation): Result {
  const meta = result._meta as Params | undefined;
  if (meta?.[SERVER_INFO_META_KEY] !== undefined) return result;
  return { ...result, _meta: { ...meta, [SERVER_INFO_META_KEY]: identity } };
}

/**
 * The initialize result a 2025 client gets: the session's capabilities without the Tasks extension. `extensions`
 * is a capability of 2026-07-28 (its changelog), shown to 2025 clients too because extensions such as MCP Apps
 * declare themselves there at initialize (2025-11-25's capabilities are an open set), but the Tasks extension is
 * 2026-07-28 wire only (per-request capabilities, `resultType: "task"`, tasks/get and tasks/cancel in shapes that
 * clash with 2025's core tasks of the same names): a 2025 client has core tasks (the `tasks` capability) instead.
 */
function legacyInitializeResult(result: Result): Result {
  const capabilities = result.capabilities as Params | undefined;
  const legacy = withoutTasksExtension(capabilities);
  return legacy === capabilities ? result : { ...result, capabilities: legacy };
}

/** Capabilities without the Tasks extension (without `extensions` when nothing else is left in it). */
function withoutTasksExtension<T extends Params | undefined>(capabilities: T): T {
  const extensions = capabilities?.extensions as Params | undefined;
  if (!extensions || !(TASKS_EXTENSION in extensions)) return capabilities;
  const { [TASKS_EXTENSION]: _tasks, ...others } = extensions;
  const { extensions: _all, ...rest } = capabilities as Params;
  return (Object.keys(others).length > 0 ? { ...rest, extensions: others } : rest) as T;
}

/** What a handler threw, as the client hears it: a database that cannot be reached is said so in MCP terms. */
export function protocolErrorOf(error: unknown): unknown {
  if (!isDatabaseUnavailable(error)) return error;
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    "Toolplane's database is unavailable right now; nothing was run. Retry in a few seconds.",
  );
}

/**
 * The MCP server a client of the session talks to, in either era. Every request is forwarded to the provider it
 * belongs to, with the client's progress token, cancellation and capabilities carried along:
 * - lists (tools, prompts, resources, templates) merge every provider under session-wide keys and URIs; a provider
 *   that cannot be listed is left out and named in a log notification and the server log;
 * - tools/call, prompts/get, resources/read, subscribe/unsubscribe and completion/complete go to the one provider
 *   the key or URI names; logging/setLevel goes to every 2025 upstream (a 2026-07-28 one gets the level with each
 *   request), and log messages reach a client at or above its level;
 * - a call the upstream answers is passed through as is (URIs in it made session-wide); a call that got no answer
 *   (timeout, upstream down) is a tool result with `isError` and the reason naming the provider, so a model sees
 *   it; a JSON-RPC error of the upstream is passed on as that error, naming the provider.
 * `session` is read per request (a long-lived connection must notice a deleted session).
 */
export async function sessionMcpServer(
  gateway: Gateway,
  session: () => Promise<GatewaySession>,
  serving: ServingContext,
  options: { instructions?: boolean } = {},
): Promise<GatewayServer> {
  // What the client learns at initialize or server/discover: the upstreams' capabilities and instructions
  // (requests built for other methods need neither: see sessionCapabilities).
  const current = await session();
  const described = options.instructions ? await gateway.describe(current) : null;
  const offered = {
    tasks: tasksOffered,
    extensions: (d: Described) => extensionsOffered(d.capabilities, d.modern),
    experimental: (d: Described) => (d.capabilities as Params).experimental as Params | undefined,
  };
  const merged = (capability: keyof typeof offered) => mergedCapability((described ?? []).map(offered[capability]));
  const [tasks, extensions, experimental] = [merged("tasks"), merged("extensions"), merged("experimental")];
  const capabilities = sessionCapabilities(described);
  // A session of one provider is that provider's server to its clients: its identity and instructions, as
  // directly; with several providers the gateway is the one server they see.
  const server = new GatewayServer(gateway.upstreamIdentity(current) ?? GATEWAY_INFO, {
    capabilities: {
      ...capabilities,
      ...(tasks ? { tasks } : {}),
      ...(extensions ? { extensions } : {}),
      ...(experimental ? { experimental } : {}),
    } as ServerCapabilities,
    instructions: sessionInstructions(current, described ?? []),
  });
  server.identity = async () => gateway.upstreamIdentity(await session());
  server.connectionId = serving.connectionId;

  /** The level a 2025 client of this connection set with logging/setLevel (it gets every message until then). */
  let clientLogLevel: LoggingLevel | undefined = serving.logLevel;
  /**
   * The upstreams this connection gave a log level: it is withdrawn when the connection ends. A request served
   * without the connection (one held by another replica, or none) gives its level once, untracked.
   */
  const leveled = new Set<Upstream>();
  const logClient = serving.canRequest ? serving.connectionId : null;
  /** The log messages a request's client wants: see requestLogLevel. */
  const logLevelOf = (req: CallRequest) => requestLogLevel(req, clientLogLevel);

  // On a connection (2025 session, SSE stream) what upstreams send outside any request is relayed to the client:
  // list changes, updates of resources it subscribed to, log messages.
  const watched = new Map<Upstream, () => void>();
  const watch = (provider: GatewaySessionProvider, upstream: Upstream) => {
    if (!serving.canRequest || watched.has(upstream)) return;
    watched.set(
      upstream,
      upstream.listen({
        notify: (notification) => {
          void relayUnsolicited(notification, provider).catch((error: unknown) => {
            serving.log.debug({ err: errorMessage(error) }, "notification not relayed");
          });
        },
        request: (request, signal) => {
          assertDeclared(request.method, server.getClientCapabilities());
          return server.request(request as never, { signal });
        },
      }),
    );
  };
  // The client's roots changed: every upstream that may have asked for them hears of it.
  server.setNotificationHandler("notifications/roots/list_changed", async () => {
    for (const upstream of watched.keys()) {
      void upstream.notify({ method: "notifications/roots/list_changed" }, gateway.timeoutMs).catch(() => undefined);
    }
  });
  const relayUnsolicited = async (notification: Notification, provider: GatewaySessionProvider) => {
    // The Tasks extension's task statuses are 2026-07-28 wire, for the listen streams that name the task (listen.ts).
    if (notification.method === "notifications/tasks") return;
    if (!logLevelAllows(clientLogLevel, notification)) return;
    const params = notification.params as Params | undefined;
    if (notification.method === "notifications/resources/updated" && typeof params?.uri === "string") {
      // The upstream connection may be shared with clients that subscribed to other resources. The client hears of
      // it under the URI it subscribed with, for the resource or one above it.
      const id = provider.sessionProviderId;
      const mine = [...subscriptions].filter(([, held]) => held.provider.sessionProviderId === id).map(([uri]) => uri);
      const uri = gateway.namespaces(await session()).updatedUri(id, params.uri, mine);
      if (uri !== undefined) await server.notification({ ...notification, params: { ...params, uri } });
    } else {
      await server.notification(await exposeNotification(notification, provider));
    }
  };
  /** An upstream's notification as the client's: task ids made session-wide. */
  const exposeNotification = async (notification: Notification, provider: GatewaySessionProvider) => {
    if (!notification.params) return notification;
    const names = gateway.namespaces(await session());
    return { ...notification, params: exposeTaskIds(notification.params, names, provider.sessionProviderId) };
  };
  // This client's resource subscriptions (session-wide URI → the upstream's): the upstream connection subscribes
  // once for all the clients that share it, and each client hears of the resources it subscribed to.
  const subscriptions = new Map<string, { provider: GatewaySessionProvider; upstream: Upstream; uri: string }>();
  server.onclose = () => {
    for (const stop of watched.values()) stop();
    watched.clear();
    // (A request served without the connection gave its level once, untracked: nothing to withdraw.)
    if (logClient !== null) {
      for (const upstream of leveled) {
        void upstream.setLogLevel(logClient, null, gateway.timeoutMs).catch(() => undefined);
      }
    }
    leveled.clear();
    for (const { upstream, uri } of subscriptions.values()) {
      void upstream.unsubscribe(uri, gateway.timeoutMs).catch(() => undefined);
    }
    subscriptions.clear();
  };

  /** What the upstream clients declare, and how the upstreams reach this request's client meanwhile. */
  const downstream = (req: ConnectionRequest): Downstream => {
    const capabilities = clientCapabilities(server, req, serving);
    return {
      capabilities,
      caller: (provider) => relayTo(req, serving, provider, capabilities, exposeNotification, logLevelOf(req)),
      connectionId: serving.connectionId,
      watch,
      // On a connection the client hears that the list grew; per request it sees it on its next listing.
      onLateListing: (method) => {
        if (!serving.canRequest) return;
        const changed = `notifications/${method.split("/")[0]}/list_changed`;
        void server.notification({ method: changed } as never).catch(() => undefined);
      },
    };
  };

  const listing = (method: ListMethod) => async (_request: unknown, ctx: ServerContext) => {
    const current = await session();
    const through = downstream(ctx.mcpReq);
    // A 2025 client may call the tools of a 2026-07-28 upstream with the Tasks extension as tasks (task-eras.ts).
    const [{ items, failures, freshness }, viaExtension] = await Promise.all([
      gateway.list(current, method, through),
      method === "tools/list" && ctx.mcpReq.envelope === undefined
        ? gateway.describe(current, through).then((all) => all.filter(coreTasksViaExtension).map((d) => d.provider))
        : ([] as GatewaySessionProvider[]),
    ]);
    await reportFailures(ctx, serving, failures, logLevelOf(ctx.mcpReq));
    return {
      [LISTS[method]]: items.map(({ item, provider }) => (viaExtension.includes(provider) ? coreTaskTool(item) : item)),
      // MCP 2026-07-28 caching: the merged list holds as long as its stalest provider's says (2025 has no such hints).
      ...(ctx.mcpReq.envelope === undefined ? {} : cacheFields(freshness)),
    };
  };
  server.setRequestHandler("tools/list", listing("tools/list") as never);
  server.setRequestHandler("prompts/list", listing("prompts/list") as never);
  server.setRequestHandler("resources/list", listing("resources/list") as never);
  server.setRequestHandler("resources/templates/list", listing("resources/templates/list") as never);

  const callOnConnection = async (req: ConnectionRequest, params: Params): Promise<Result> => {
    const current = await session();
    const { name, arguments: input, ...rest } = params;
    const key = String(name);
    const outcome = await gateway
      .call(current, key, input as Params | undefined, callOrigin(serving, req, rest), {
        ...downstream(req),
        signal: req.signal,
        ...progressRelay(req),
        params: forwardedParams(rest, req, logLevelOf(req)),
      })
      .catch((error: unknown) => {
        throw asProtocolError(error);
      });
    return toolCallResult(gateway, session, outcome, key);
  };
  if (serving.canRequest) server.callOnConnection = callOnConnection;
  server.setRequestHandler("tools/call", (async (request: { params: Params }, ctx: ServerContext) => {
    if (serving.canRequest) return callOnConnection(ctx.mcpReq, request.params);
    const capabilities = clientCapabilities(server, ctx.mcpReq, serving);
    return callToolPerRequest({ gateway, session, serving, capabilities }, ctx.mcpReq, request.params);
  }) as never);

  server.setRequestHandler("prompts/get", (async (request: { params: Params }, ctx: ServerContext) => {
    const current = await session();
    const key = String(request.params.name);
    const target = await gateway
      .locate(current, "prompts/list", key, downstream(ctx.mcpReq))
      .catch((error: unknown) => {
        throw asProtocolError(error);
      });
    if (!target)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Prompt ${key} is not offered by this session.`);
    return askingUpstream(ctx, current, target, "prompts/get", key, request.params, { name: target.name });
  }) as never);

  /**
   * A prompts/get or resources/read of `target` (the client's `key` for it), whose upstream may put questions to the
   * client meanwhile: on a connection they reach the client as requests (relayTo); per request they leave as
   * input_required rounds, as a tools/call's do (MCP 2026-07-28 lets these requests carry them).
   */
  const askingUpstream = (
    ctx: ServerContext,
    current: GatewaySession,
    target: { provider: GatewaySessionProvider; upstream: Upstream },
    method: "prompts/get" | "resources/read",
    key: string,
    params: Params,
    upstreamNames: Params,
  ) => {
    const { provider, upstream } = target;
    const forwarded = { ...forwardedParams(params, ctx.mcpReq, logLevelOf(ctx.mcpReq)), ...upstreamNames };
    const start = (link: Partial<RoundLink> = {}) => forward(ctx, provider, upstream, method, forwarded, link);
    const finish = (result: Params) => exposeUris(result, gateway.namespaces(current), provider.sessionProviderId);
    if (serving.canRequest) return start().then(finish);
    return servedInRounds(current.id, `${method} ${key}`, ctx.mcpReq, params, serving.logLevel, start, finish);
  };

  /** The provider, upstream and upstream URI behind a session-wide resource URI. */
  const locateResource = async (current: GatewaySession, uri: string, ctx: ServerContext) => {
    const target = await gateway.locateUri(current, uri, downstream(ctx.mcpReq)).catch((error: unknown) => {
      throw asProtocolError(error);
    });
    if (!target) throw new ProtocolError(-32002, `Resource ${uri} is not offered by this session.`, { uri });
    return target;
  };
  server.setRequestHandler("resources/read", (async (request: { params: Params }, ctx: ServerContext) => {
    const current = await session();
    const uri = String(request.params.uri);
    const target = await locateResource(current, uri, ctx);
    return askingUpstream(ctx, current, target, "resources/read", uri, request.params, { uri: target.uri });
  }) as never);
  server.setRequestHandler("resources/subscribe", (async (request: { params: Params }, ctx: ServerContext) => {
    const uri = String(request.params.uri);
    if (subscriptions.has(uri)) return {};
    const target = await locateResource(await session(), uri, ctx);
    await gateway
      .subscriptionRefusal(target, uri)
      .then((refusal) => {
        if (refusal) throw refusal;
        return target.upstream.subscribe(target.uri, gateway.timeoutMs);
      })
      .catch((error: unknown) => {
        throw asProtocolError(error, target.provider);
      });
    subscriptions.set(uri, target);
    return {};
  }) as never);
  server.setRequestHandler("resources/unsubscribe", (async (request: { params: Params }) => {
    const uri = String(request.params.uri);
    const held = subscriptions.get(uri);
    subscriptions.delete(uri);
    await held?.upstream.unsubscribe(held.uri, gateway.timeoutMs).catch((error: unknown) => {
      throw asProtocolError(error);
    });
    return {};
  }) as never);

  // Routed by its ref: a prompt's key, or a resource template's URI, each rewritten to the upstream's own. Served
  // only where declared (the SDK refuses a handler of an undeclared capability): else the fallback answers -32601.
  const complete = async (request: { params: Params }, ctx: ServerContext) => {
    const current = await session();
    const ref = (request.params.ref ?? {}) as Params;
    const byPrompt = ref.type === "ref/prompt";
    const target = await (byPrompt
      ? gateway
          .locate(current, "prompts/list", String(ref.name), downstream(ctx.mcpReq))
          .then((t) => t && { ...t, ref: { ...ref, name: t.name } })
      : gateway
          .locateUri(current, String(ref.uri), downstream(ctx.mcpReq))
          .then((t) => t && { ...t, ref: { ...ref, uri: t.uri } })
    ).catch((e: unknown) => {
      throw asProtocolError(e);
    });
    if (!target) {
      const what = byPrompt ? `Prompt ${String(ref.name)}` : `Resource template ${String(ref.uri)}`;
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${what} is not offered by this session.`);
    }
    // A provider without completions is not asked (it would answer -32601): it has nothing to suggest.
    const upstreamOffers = await target.upstream.describe(gateway.timeoutMs).catch((error: unknown) => {
      throw asProtocolError(error, target.provider);
    });
    if (!upstreamOffers.capabilities.completions) return { completion: { values: [] } };
    const params = { ...forwardedParams(request.params, ctx.mcpReq, logLevelOf(ctx.mcpReq)), ref: target.ref };
    const result = await forward(ctx, target.provider, target.upstream, "completion/complete", params);
    return exposeUris(result, gateway.namespaces(current), null);
  };
  if (capabilities.completions) server.setRequestHandler("completion/complete", complete as never);

  /**
   * `ask` of every upstream at once (undefined: not this one), waiting on each as a listing does: one that has not
   * answered the list timeout after another did is left out of the answer, and named in the server log, as is one
   * that fails.
   */
  const everyUpstream = async <T>(
    method: string,
    described: Described[],
    ask: (described: Described) => Promise<T> | undefined,
  ): Promise<T[]> => {
    const race = new FirstAnswer();
    const answers = await Promise.all(
      described.map(async (entry) => {
        const asked = ask(entry);
        if (!asked) return [];
        try {
          return [await race.bound(asked, gateway.listMs, undefined, "left out of this answer.")];
        } catch (error) {
          serving.log.warn(
            { provider: entry.provider.providerSlug, err: errorMessage(error) },
            `${method} failed upstream`,
          );
          return [];
        }
      }),
    );
    return answers.flat();
  };

  /** The client's level from now on: for what is relayed to it, and for its 2025 upstreams. */
  const setClientLogLevel = async (level: LoggingLevel, through: Downstream) => {
    clientLogLevel = level;
    const described = await gateway.describe(await session(), through);
    // A 2026-07-28 upstream has no logging/setLevel: it gets the level with each request (see forwardedParams).
    await everyUpstream("logging/setLevel", described, ({ upstream, capabilities, modern }) => {
      if (!upstream || !capabilities.logging || modern) return undefined;
      leveled.add(upstream);
      return upstream.setLogLevel(logClient, level, gateway.timeoutMs);
    });
  };
  server.setRequestHandler("logging/setLevel", (async (
    request: { params: { level: LoggingLevel } },
    ctx: ServerContext,
  ) => {
    await serving.storeLogLevel?.(request.params.level);
    await setClientLogLevel(request.params.level, downstream(ctx.mcpReq));
    return {};
  }) as never);
  if (serving.canRequest) {
    server.applyLogLevel = async (level) => {
      if (level === clientLogLevel) return;
      const capabilities = server.getClientCapabilities();
      await setClientLogLevel(level, { capabilities, connectionId: serving.connectionId, watch });
    };
  }

  /**
   * Tasks, of 2025's core (MCP 2025-11-25) and of the Tasks extension (2026-07-28, SEP-2663): an upstream's task id
   * is made session-wide like a URI (`<slug>+<id>` with several providers), so tasks/get, tasks/result, tasks/update
   * and tasks/cancel reach the upstream that owns the task, and tasks/list merges them all. The answers pass through:
   * the upstream checks what the request declared (but for the extension itself, see below).
   */
  const task = async (method: string, params: Params, ctx: ServerContext) => {
    const current = await session();
    const names = gateway.namespaces(current);
    if (method === "tasks/list") {
      // The first page of each upstream that lists tasks; one that fails is left out and named, as in listings.
      const described = await gateway.describe(current, downstream(ctx.mcpReq));
      const lists = await everyUpstream(method, described, ({ provider, upstream, capabilities }) =>
        upstream && (capabilities as ServerCapabilities).tasks?.list
          ? forward(ctx, provider, upstream, method, {}).then(
              (listed) => exposeTaskIds(listed, names, provider.sessionProviderId).tasks as unknown[],
            )
          : undefined,
      );
      return { tasks: lists.flat() };
    }
    // tasks.md "Error Handling": the extension's methods from a 2026-07-28 request that did not declare it are -32021,
    // whatever the task id. The gateway says so itself: an id no provider owns would otherwise be -32602, and a 2025
    // upstream's task is translated here, without an upstream to refuse (sep-2663-tasks-methods-non-declaring).
    if (
      ctx.mcpReq.envelope !== undefined &&
      EXTENSION_TASK_METHODS.has(method) &&
      !declaresTasksExtension(clientCapabilities(server, ctx.mcpReq, serving))
    ) {
      throw new MissingRequiredClientCapabilityError(
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        `Missing required client capability: ${method} needs the Tasks extension`,
      );
    }
    const taskId = String(params.taskId);
    const target = await gateway.locateTask(current, taskId, downstream(ctx.mcpReq)).catch((error: unknown) => {
      throw asProtocolError(error);
    });
    if (!target)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Task ${taskId} is not known to this session.`);
    const providerId = target.provider.sessionProviderId;
    let answer: Params;
    // The extension's requests of a 2026-07-28 client about a task of a 2025 upstream are translated (and recorded).
    if (
      ctx.mcpReq.envelope !== undefined &&
      EXTENSION_TASK_METHODS.has(method) &&
      !(await gateway.speaksModern(target.upstream))
    ) {
      answer = await legacyTask(method, params, ctx, target);
    } else if (
      ctx.mcpReq.envelope === undefined &&
      coreTasksViaExtension(await target.upstream.describe(gateway.timeoutMs))
    ) {
      answer = await coreTaskViaExtension(method, params, ctx, current, target);
    } else {
      answer = await forward(
        ctx,
        target.provider,
        target.upstream,
        method,
        { ...forwardedParams(params, ctx.mcpReq, logLevelOf(ctx.mcpReq)), taskId: target.uri },
        { untilDone: method === "tasks/result" },
      );
      await recordTaskSeen(method, answer, target);
    }
    return exposeTaskIds(exposeUris(answer, names, providerId), names, providerId);
  };

  /** The record follows the task where it can; the client's answer does not wait on that write failing. */
  const recordTaskSeen = async (method: string, answer: Params, { provider, uri }: LocatedTask) => {
    const seen = taskSeenIn(method, answer);
    if (!seen) return;
    await gateway.taskSeen(provider.sessionProviderId, uri, seen).catch((error: unknown) => {
      serving.log.warn({ err: errorMessage(error) }, "task not recorded");
    });
  };

  /**
   * A Tasks extension request about a task of a 2025-11-25 upstream (which created it for a translated tools/call,
   * see task-eras.ts), answered in the extension's terms (tasks.md), and recorded as other tasks are:
   * - tasks/get: the 2025 task, and once it ended its outcome from 2025's tasks/result inline ("Task Polling"): a
   *   result makes it `completed` (2025 ends a tool error's task `failed`; the extension keeps `failed` for JSON-RPC
   *   errors, "Task Execution Errors"), a JSON-RPC error `failed` with that `error`;
   * - tasks/cancel: 2025's tasks/cancel, acknowledged with an empty result ("Task Cancellation");
   * - tasks/update: refused, as 2025 has no way to answer a task's requests but its tasks/result stream.
   * So an `input_required` 2025 task shows no `inputRequests`: 2025 sends them once, as server→client requests on
   * a tasks/result stream. Listing them would take a tasks/result held open upstream by this process with the
   * upstream's requests left pending across the client's separate tasks/get and tasks/update (per-process state
   * tied to one upstream session, as Continuations are for calls); not done, see runsAsTask for what avoids it.
   */
  const legacyTask = async (method: string, params: Params, ctx: ServerContext, target: LocatedTask) => {
    const { provider, upstream, uri } = target;
    if (method === "tasks/update") {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `Provider ${provider.providerSlug} speaks MCP 2025-11-25, which has no tasks/update: its task's input requests cannot be answered through the Tasks extension.`,
      );
    }
    const upstreamParams = { ...forwardedParams(params, ctx.mcpReq, logLevelOf(ctx.mcpReq)), taskId: uri };
    const answer = await forward(ctx, provider, upstream, method, upstreamParams);
    let task = extensionTask(withoutMetaKey(answer, RELATED_TASK_META_KEY));
    if (method === "tasks/get" && LEGACY_ENDED.has(String(task.status))) {
      const result = gateway.forward(provider, upstream, "tasks/result", upstreamParams, {
        ...downstream(ctx.mcpReq),
        signal: ctx.mcpReq.signal,
        untilDone: true,
      });
      const outcome = await legacyTaskOutcome(result).catch((error: unknown) => {
        throw asProtocolError(error, provider);
      });
      task = { ...task, ...outcome };
    }
    await recordTaskSeen(method, task, target);
    return method === "tasks/get" ? { ...task, resultType: "complete" } : { resultType: "complete" };
  };

  /**
   * A 2025 client's request about a task of a 2026-07-28 upstream with the Tasks extension (created for its
   * task-augmented tools/call, see coreCreateTaskResult), asked through the extension (declared on the request) and
   * answered as MCP 2025-11-25 core tasks do, and recorded as other tasks are:
   * - tasks/get: the extension's tasks/get as a 2025 Task (its outcome is for tasks/result);
   * - tasks/result: the extension's tasks/get until the task ended, as 2025's tasks/result blocks ("Result
   *   Retrieval"), then its inline result or JSON-RPC error (coreTaskOutcome). Meanwhile the input requests of an
   *   `input_required` task go to the client on this request's stream, where 2025 puts them, and its answers to
   *   the upstream's tasks/update;
   * - tasks/cancel: refused for an ended task (-32602, as 2025 requires), else the extension's tasks/cancel and the
   *   task as tasks/get sees it then (the extension's cancellation may take effect later).
   * A task the gateway answered itself (the upstream ran the call at once) is read from its call's record.
   */
  const coreTaskViaExtension = async (
    method: string,
    params: Params,
    ctx: ServerContext,
    current: GatewaySession,
    target: LocatedTask,
  ): Promise<Params> => {
    const { provider, uri } = target;
    const held = await gateway.heldTask(provider.sessionProviderId, uri);
    if (held) return heldTaskAnswer(method, uri, held, target);
    const through = downstream(ctx.mcpReq);
    const upstream = await gateway
      .upstreamFor(current.instanceId, provider, {
        ...through,
        capabilities: declaringTasksExtension(through.capabilities),
      })
      .catch((error: unknown) => {
        throw asProtocolError(error, provider);
      });
    const forwarded = forwardedParams(params, ctx.mcpReq, logLevelOf(ctx.mcpReq));
    const ask = (taskMethod: string, more: Params = {}) =>
      forward(ctx, provider, upstream, taskMethod, { ...forwarded, ...more, taskId: uri });
    let task = await ask("tasks/get");
    if (method === "tasks/cancel") {
      if (TERMINAL_TASK_STATUSES.has(String(task.status))) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Task ${String(params.taskId)} already ended.`);
      }
      await ask("tasks/cancel");
      task = await ask("tasks/get");
    }
    const relayed = new Set<string>();
    let recorded: unknown;
    while (method === "tasks/result" && !TERMINAL_TASK_STATUSES.has(String(task.status))) {
      if (task.status !== recorded) await recordTaskSeen("tasks/get", task, target);
      recorded = task.status;
      const asked = Object.entries((task.inputRequests ?? {}) as Record<string, InputRequest>).filter(
        ([key]) => !relayed.has(key),
      );
      if (asked.length > 0) {
        const caller = relayTo(ctx.mcpReq, serving, provider, through.capabilities, exposeNotification, null);
        const related = { [RELATED_TASK_META_KEY]: { taskId: String(params.taskId) } };
        const inputResponses = Object.fromEntries(
          await Promise.all(
            asked.map(async ([key, { method: asks, params: asked }]) => {
              relayed.add(key);
              const request = { method: asks, params: { ...asked, _meta: { ...asked?._meta, ...related } } };
              return [key, await caller.request(request as never, ctx.mcpReq.signal)];
            }),
          ),
        );
        await ask("tasks/update", { inputResponses });
      } else {
        await sleep(Number(task.pollIntervalMs ?? 1000), undefined, { signal: ctx.mcpReq.signal });
      }
      task = await ask("tasks/get");
    }
    await recordTaskSeen("tasks/get", task, target);
    return method === "tasks/result" ? coreTaskOutcome(task) : coreTask(task);
  };

  /** A 2025 client's request about a task the gateway answered itself (see coreCreateTaskResult): its record's. */
  const heldTaskAnswer = async (
    method: string,
    taskId: string,
    held: NonNullable<Awaited<ReturnType<Gateway["heldTask"]>>>,
    target: LocatedTask,
  ): Promise<Params> => {
    if (method === "tasks/cancel") {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Task ${taskId} already ended.`);
    }
    if (method === "tasks/result") {
      const result = (held.output ?? {}) as Params;
      await recordTaskSeen(method, result, target);
      return coreTaskOutcome({ taskId, status: "completed", result });
    }
    const createdAt = new Date(held.created_at).toISOString();
    const endedAt = held.completed_at ? new Date(held.completed_at).toISOString() : createdAt;
    return heldTask(taskId, String(held.task_status), createdAt, endedAt);
  };

  /**
   * The provider and upstream a request of a method the gateway has no merge rule for goes to: the session's one
   * provider, else the one that can own the method (see methodOwners), connected as for this client (an upstream may
   * offer an extension only to a client that declares it). None or several: MethodNotFound, naming the candidates.
   */
  const methodOwner = async (method: string, through: Downstream) => {
    const current = await session();
    const only = current.providers.length === 1 ? current.providers[0] : undefined;
    if (only) return { provider: only, upstream: await gateway.upstreamFor(current.instanceId, only, through) };
    const owners = methodOwners(method, await gateway.describe(current, through));
    const [owner] = owners;
    if (owners.length === 1 && owner?.upstream) return { provider: owner.provider, upstream: owner.upstream };
    const slugs = owners.map((d) => d.provider.providerSlug);
    const why =
      slugs.length === 0
        ? "no provider of this session declares an extension or experimental capability that could offer it"
        : `providers ${slugs.join(", ")} may each offer it; it is sent to none of them`;
    throw new ProtocolError(
      ProtocolErrorCode.MethodNotFound,
      `Method not found: ${method} (${why}).`,
      slugs.length > 0 ? { providers: slugs } : undefined,
    );
  };

  /** Other requests the gateway has no merge rule for (methods of extensions, say): to the provider that owns them. */
  server.fallbackRequestHandler = server.connectionHandler(async (request, ctx) => {
    const { mcpReq } = ctx;
    // Only when the session declared no completions (no handler then): what a server without them answers.
    if (request.method === "completion/complete") {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        "Method not found: completion/complete (no provider of this session offers completions).",
      );
    }
    if (request.method.startsWith("tasks/")) {
      return task(request.method, (request.params ?? {}) as Params, ctx as ServerContext) as never;
    }
    if (request.method === SKILLS_LIST_METHOD) return skillsListing(ctx as ServerContext) as never;
    if (SKILL_URI_METHODS.has(request.method)) {
      return bySkillUri(request.method, (request.params ?? {}) as Params, ctx as ServerContext) as never;
    }
    const { provider, upstream } = await methodOwner(request.method, downstream(mcpReq));
    const params = request.params ? forwardedParams(request.params as Params, mcpReq, logLevelOf(mcpReq)) : undefined;
    return forward(ctx as ServerContext, provider, upstream, request.method, params) as never;
  });

  /** The Skills extension's skills/list: every provider's skills as one listing (see skills.ts). */
  const skillsListing = async (ctx: ServerContext) => {
    const current = await session();
    const through = downstream(ctx.mcpReq);
    const send: SendToProvider = (provider, upstream, method, params) =>
      forward(ctx, provider, upstream, method, forwardedParams(params, ctx.mcpReq, logLevelOf(ctx.mcpReq)));
    const { result, failures } = await listSkills(gateway, current, await gateway.describe(current, through), send);
    await reportFailures(ctx, serving, failures, logLevelOf(ctx.mcpReq));
    return result;
  };
  /** skills/get and resources/directory/read: to the provider the URI names, as resources/read. */
  const bySkillUri = async (method: string, params: Params, ctx: ServerContext) => {
    const current = await session();
    const target = await locateResource(current, String(params.uri), ctx);
    const { capabilities } = await target.upstream.describe(gateway.timeoutMs);
    const refusal = skillRefusal(method, target.provider, capabilities as Params);
    if (refusal) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${String(params.uri)}: ${refusal}`);
    const result = await forward(ctx, target.provider, target.upstream, method, {
      ...forwardedParams(params, ctx.mcpReq, logLevelOf(ctx.mcpReq)),
      uri: target.uri,
    });
    const names = gateway.namespaces(current);
    return exposeSkillResult(exposeUris(result, names, target.provider.sessionProviderId), (uri) =>
      names.uri(target.provider.sessionProviderId, uri),
    );
  };

  // The Tasks extension's tasks/get and tasks/cancel (SEP-2663) reuse names of 2025's core tasks, which 2026-07-28
  // dropped: the SDK serves them on 2026-07-28 only to handlers registered with schemas of their own.
  for (const method of ["tasks/get", "tasks/cancel"]) {
    server.setRequestHandler(method, { params: unchecked }, (params, ctx) => task(method, params, ctx));
  }

  const forward = (
    ctx: ServerContext,
    provider: GatewaySessionProvider,
    upstream: Upstream,
    method: string,
    params: Params | undefined,
    options: Pick<CallOptions, "untilDone"> & Partial<RoundLink> = {},
  ) =>
    gateway
      .forward(provider, upstream, method, params, {
        ...downstream(ctx.mcpReq),
        signal: ctx.mcpReq.signal,
        ...progressRelay(ctx.mcpReq),
        ...options,
      })
      .catch((error: unknown) => {
        throw asProtocolError(error, provider);
      });

  return server;
}

/** The Tasks extension's requests about a task (SEP-2663; 2026-07-28 has no tasks/result or tasks/list). */
const EXTENSION_TASK_METHODS = new Set(["tasks/get", "tasks/update", "tasks/cancel"]);

/** A server→client request as an `input_required` task lists it (MCP 2026-07-28 multi round-trip requests). */
type InputRequest = { method: string; params?: Params & { _meta?: Params } };

/** The provider and upstream that own a task, and the task id as the upstream names it. */
type LocatedTask = NonNullable<Awaited<ReturnType<Gateway["locateTask"]>>>;

/** A relayed server→client request (sampling, elicitation, roots) reaches only a client that declared it. */
function assertDeclared(method: string, capabilities: ClientCapabilities | undefined): void {
  const needed = (RELAYED_REQUESTS as Record<string, keyof ClientCapabilities | undefined>)[method];
  if (needed && !capabilities?.[needed]) {
    throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `The client did not declare ${needed}.`);
  }
}

/**
 * What serving a tools/call needs of its request: the SDK's `ctx.mcpReq` is one, and so is the fast lane's view of
 * a plain HTTP exchange (fast-call.ts), so both serve a call with the same code.
 */
export interface CallRequest {
  /** Aborted when the client goes away or cancels. */
  signal: AbortSignal;
  /** The request's `_meta` without the 2026-07-28 envelope (the progress token, trace context, the client's own). */
  _meta?: Params;
  /** A 2026-07-28 request's envelope (its protocol version, client, capabilities and log level); none in 2025. */
  envelope?: Params;
  notify(notification: Notification): Promise<void>;
  /** The `requestState` of a retry that answers an `input_required` round. */
  requestState(): unknown;
  /** The answers of a retry that answers an `input_required` round. */
  inputResponses?: Params;
}

/**
 * A request on a connection as the gateway serves it: the SDK's `ctx.mcpReq`, or the stand-in of the fast lane for
 * 2025 sessions. `send` puts a server→client request (sampling, elicitation, roots) on the request's stream.
 */
export interface ConnectionRequest extends CallRequest {
  send(
    request: { method: string; params?: Params },
    options: { signal: AbortSignal; timeout: number },
  ): Promise<unknown>;
}

/** How upstream work started per request ends: its outcome, or an error before it had one. */
type RoundEnd = { outcome: unknown } | { error: unknown };
/** The request of per-request work the client is waiting on right now (the first, then each retry). */
interface LiveRequest {
  req: CallRequest;
}
/** Work whose upstream asked the client something, waiting for the retry that brings the answer (per process). */
const continuations = new Continuations<RoundEnd, LiveRequest>(clientAnswerMs);

/** How upstream work served in rounds reaches its client, and what stops it. */
type RoundLink = Required<Pick<CallOptions, "caller" | "signal" | "onprogress">>;

/**
 * A request served per request (2026-07-28, or 2025 without a session) whose upstream may put questions to the
 * client (sampling, elicitation, roots) while it runs: tools/call, prompts/get and resources/read, the requests MCP
 * 2026-07-28 lets answer `input_required` (basic/patterns/mrtr, "Supported Requests"). `start` begins the upstream
 * work; each question leaves as an input_required round, and the work waits here for the retry that answers it;
 * `finish` makes the work's outcome the answer. `subject` names what the request is about: a retry must be about the
 * same. Cancelling the request the client is waiting on (the first or a retry) cancels the work.
 */
async function servedInRounds<T>(
  sessionId: string,
  subject: string,
  req: CallRequest,
  params: Params,
  logLevel: LoggingLevel | undefined,
  start: (link: RoundLink) => Promise<T>,
  finish: (outcome: T) => Promise<Result> | Result,
): Promise<Result> {
  const requestState = req.requestState() ?? params.requestState;
  let continuation: Continuation<RoundEnd, LiveRequest>;
  if (Continuations.isToken(requestState)) {
    const held = continuations.take(requestState, sessionId, subject);
    if (!held) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        "This request is not waiting on this server process any more (it expired, the retry reached another " +
          "replica, or it retries another request).",
      );
    }
    continuation = held;
    held.context.req = req;
    continuation.answer(req.inputResponses ?? (params.inputResponses as Params | undefined));
  } else {
    const live: LiveRequest = { req };
    const started = new Continuation<RoundEnd, LiveRequest>(sessionId, subject, live);
    continuation = started;
    start({
      caller: () => ({
        request: (embedded, signal) => started.ask(embedded, signal),
        notify: (notification) => {
          if (notification.method === "notifications/progress") return;
          if (!logLevelAllows(requestLogLevel(live.req, logLevel), notification)) return;
          void live.req.notify(notification).catch(() => undefined);
        },
      }),
      signal: started.control.signal,
      onprogress: (progress) => {
        const token = live.req._meta?.progressToken;
        if (token === undefined) return;
        void live.req
          .notify({ method: "notifications/progress", params: { ...progress, progressToken: token } })
          .catch(() => undefined);
      },
    }).then(
      (outcome) => started.end({ outcome }),
      (error: unknown) => started.end({ error }),
    );
  }
  // While the client waits on this request, cancelling it cancels the work.
  const { control } = continuation;
  const cancel = () => control.abort(req.signal.reason);
  req.signal.addEventListener("abort", cancel);
  try {
    const step = await continuation.next();
    if (step.kind === "ask") {
      continuations.hold(continuation);
      return {
        resultType: "input_required",
        inputRequests: { [step.key]: step.request },
        requestState: continuation.token,
      };
    }
    continuations.release(continuation);
    if ("error" in step.outcome) throw asProtocolError(step.outcome.error);
    // The outcome of this subject's `start`, the only work a continuation of this subject runs.
    return await finish(step.outcome.outcome as T);
  } finally {
    req.signal.removeEventListener("abort", cancel);
  }
}

/** Who a per-request tools/call is served for. */
export interface PerRequestCaller {
  gateway: Gateway;
  session: () => Promise<GatewaySession>;
  serving: ServingContext;
  capabilities: ClientCapabilities | undefined;
}

/**
 * A tools/call served per request (2026-07-28, or 2025 without a session), in rounds (see servedInRounds). Its
 * result or error is the handler's, before the SDK's (or the fast lane's) encoding.
 */
export async function callToolPerRequest(caller: PerRequestCaller, req: CallRequest, params: Params): Promise<Result> {
  const { gateway, session, serving, capabilities } = caller;
  const current = await session();
  const { name, arguments: input, ...rest } = params;
  const key = String(name);
  const start = (link: RoundLink) => {
    // The retry of a URL elicitation the gateway asked for (see urlElicitationRound) is the call again, as the
    // upstream's 2025 client would make it: without the round's state and answers.
    const retriesUrl = answeredRound(req.requestState() ?? rest.requestState)?.upstreamState === URL_ELICITATION_RETRY;
    const forwarded = retriesUrl ? { requestState: () => undefined } : req;
    return gateway.call(current, key, input as Params | undefined, callOrigin(serving, req, rest), {
      capabilities,
      connectionId: serving.connectionId,
      ...(serving.paramHeaders ? { paramHeaders: serving.paramHeaders } : {}),
      // Declared on this 2026-07-28 request (the extension is negotiated per request, not per connection).
      tasksExtension: req.envelope !== undefined && declaresTasksExtension(capabilities),
      ...link,
      params: forwardedParams(
        retriesUrl ? withoutRound(rest) : rest,
        forwarded,
        requestLogLevel(req, serving.logLevel),
      ),
    });
  };
  return servedInRounds(current.id, `tools/call ${key}`, req, rest, serving.logLevel, start, (outcome) => {
    const urlRound = req.envelope !== undefined ? urlElicitationRound(outcome, capabilities) : undefined;
    return urlRound ?? toolCallResult(gateway, session, outcome, key);
  });
}

/** A retry's params without the round it answers: its state and answers. */
function withoutRound(params: Params): Params {
  const { inputResponses: _answers, requestState: _state, ...rest } = params;
  return rest;
}

/** The upstream state of an `input_required` round whose retry is the call again (see urlElicitationRound). */
const URL_ELICITATION_RETRY = "url-elicitation";

/**
 * A 2025-11-25 upstream's URLElicitationRequiredError (-32042: the user must visit a URL, then the client retries;
 * 2025-11-25 client/elicitation) as MCP 2026-07-28 puts it, which has no such error: an `input_required` round of
 * URL-mode elicitations (basic/patterns/mrtr), for a client that declared URL mode; its retry calls again. The call
 * that got the error stays recorded as failed, and the retry as answering it. Undefined for any other outcome.
 */
function urlElicitationRound(outcome: CallOutcome | null, capabilities: ClientCapabilities | undefined) {
  const failure = outcome?.failure;
  if (!outcome || failure?.rpcCode !== URL_ELICITATION_REQUIRED) return undefined;
  if ((capabilities?.elicitation as Params | undefined)?.url === undefined) return undefined;
  const elicitations = (failure.rpcData as { elicitations?: unknown } | undefined)?.elicitations;
  const asked = Array.isArray(elicitations) ? elicitations.filter((e): e is Params => isUrlElicitation(e)) : [];
  if (asked.length === 0) return undefined;
  return {
    resultType: "input_required",
    inputRequests: Object.fromEntries(
      asked.map((params, i) => [`url-${i + 1}`, { method: "elicitation/create", params: { ...params, mode: "url" } }]),
    ),
    requestState: roundState(outcome.record.id, URL_ELICITATION_RETRY),
  } as Result;
}
const URL_ELICITATION_REQUIRED = -32042;
const isUrlElicitation = (value: unknown) =>
  !!value && typeof value === "object" && typeof (value as Params).url === "string";

/** Where a tools/call comes from, as its record says: the MCP endpoint, its connection, the round it answers. */
function callOrigin(serving: ServingContext, req: Pick<CallRequest, "requestState">, params: Params): CallOrigin {
  const answers = answeredRound(req.requestState() ?? params.requestState);
  return {
    transport: "mcp",
    connectionId: serving.connectionId,
    ...(answers ? { answersCallId: answers.callId } : {}),
  };
}

/** A call's outcome as the client gets it: the result with session-wide URIs, or its failure naming the provider. */
async function toolCallResult(
  gateway: Gateway,
  session: () => Promise<GatewaySession>,
  outcome: CallOutcome | null,
  key: string,
): Promise<Result> {
  if (!outcome) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${key} is not offered by this session.`);
  const current = await session();
  const provider = current.providers.find((p) => p.sessionProviderId === outcome.record.session_provider_id);
  if (outcome.result) {
    const names = gateway.namespaces(current);
    const result = exposeUris(outcome.result, names, outcome.record.session_provider_id);
    const exposed = exposeTaskIds(result, names, outcome.record.session_provider_id);
    // The retry that answers a round names it (see rounds.ts).
    if (exposed.resultType !== "input_required") return exposed;
    return { ...exposed, requestState: roundState(outcome.record.id, exposed.requestState) };
  }
  const failure = outcome.failure ?? new UpstreamFailure("upstream_unavailable", "The tool call failed.");
  const reason = failure instanceof ReauthenticationNeeded ? failure.clientMessage : failure.message;
  const message = `Provider ${provider?.providerSlug ?? "?"}: ${reason}`;
  if (failure.code === "upstream_error") throw new ProtocolError(failure.rpcCode ?? -32603, message, failure.rpcData);
  return { content: [{ type: "text", text: message }], isError: true };
}

/**
 * The client's capabilities: from its request's `_meta` envelope (2026-07-28), or from its `initialize` (2025),
 * on this connection or stored by the replica that answered it. A 2025 client's never include the Tasks extension,
 * 2026-07-28 wire it cannot speak (see legacyInitializeResult): the gateway does not declare it upstream for one.
 */
function clientCapabilities(
  server: Server,
  req: Pick<CallRequest, "_meta" | "envelope">,
  serving: ServingContext,
): ClientCapabilities | undefined {
  const declared = req._meta?.[CLIENT_CAPABILITIES_META_KEY];
  const held =
    (declared as ClientCapabilities | undefined) ?? serving.clientCapabilities ?? server.getClientCapabilities();
  return req.envelope ? held : (withoutTasksExtension(held as Params | undefined) as ClientCapabilities | undefined);
}

/**
 * The params of the client's request as the upstream gets them: the client's `_meta` minus what the upstream client
 * sets itself (its envelope, a progress token of its own), and the answers of an `input_required` round (sent by a
 * 2026-07-28 client, or gathered from a 2025 client by the SDK's shim) with the upstream's `requestState`.
 */
function forwardedParams(
  params: Params,
  req: Pick<CallRequest, "inputResponses" | "requestState">,
  logLevel: LoggingLevel | null | undefined,
): Params {
  const { _meta: meta, requestState: ownState, ...rest } = params as Params & { _meta?: Params };
  const kept = Object.fromEntries(Object.entries(meta ?? {}).filter(([key]) => !ENVELOPE_KEYS.has(key)));
  // The level the client asked for: a 2026-07-28 upstream sends log messages only for requests that carry one.
  if (logLevel) kept[LOG_LEVEL_META_KEY] = logLevel;
  const inputResponses = req.inputResponses ?? rest.inputResponses;
  const given = req.requestState() ?? ownState;
  // The upstream gets back its own state, not the round's wrapping (see rounds.ts).
  const round = answeredRound(given);
  const requestState = round ? round.upstreamState : given;
  return {
    ...rest,
    ...(Object.keys(kept).length > 0 ? { _meta: kept } : {}),
    ...(inputResponses !== undefined ? { inputResponses } : {}),
    ...(typeof requestState === "string" ? { requestState } : {}),
  };
}

/**
 * What a task request's answer says of the task: the status tasks/get and tasks/cancel return, or the outcome
 * tasks/result returns (a 2025 tool's task ends `failed` when its result is a tool error, as MCP 2025-11-25 defines
 * it). The Tasks extension's tasks/get (a DetailedTask) carries the outcome itself: the `result` of a completed task,
 * the JSON-RPC `error` of a failed one; its tasks/cancel answers only an acknowledgement.
 */
function taskSeenIn(method: string, result: Params): TaskSeen | undefined {
  if (method === "tasks/result") return { status: result.isError === true ? "failed" : "completed", result };
  if ((method !== "tasks/get" && method !== "tasks/cancel") || typeof result.status !== "string") return undefined;
  return taskSeenOf(result as Params & { status: string });
}

/** Upstream progress, sent to the client under its own progress token (only when it asked for progress). */
function progressRelay(req: Pick<CallRequest, "_meta" | "notify">) {
  const progressToken = req._meta?.progressToken;
  if (progressToken === undefined) return {};
  return {
    onprogress: (progress: { progress: number; total?: number; message?: string }) => {
      void req
        .notify({ method: "notifications/progress", params: { ...progress, progressToken } })
        .catch(() => undefined);
    },
  };
}

/**
 * The log messages a request's client wants: a 2026-07-28 request names its level in its envelope, and without one
 * it wants none (null: the revision forbids sending it any); a 2025 client wants those at or above the level it
 * set on its connection (`connectionLevel`), every one until it set one (undefined).
 */
function requestLogLevel(
  req: Pick<CallRequest, "envelope">,
  connectionLevel?: LoggingLevel,
): LoggingLevel | null | undefined {
  if (!req.envelope) return connectionLevel;
  return asLogLevel(req.envelope[LOG_LEVEL_META_KEY]) ?? null;
}

/** Whether `notification` may reach a client that wants the log messages of `level` (see requestLogLevel). */
function logLevelAllows(level: LoggingLevel | null | undefined, notification: Notification): boolean {
  if (notification.method !== "notifications/message" || level === undefined) return true;
  if (level === null) return false;
  const severity = LOG_LEVELS.indexOf(
    (notification.params as { level?: LoggingLevel } | undefined)?.level ?? "emergency",
  );
  return severity >= LOG_LEVELS.indexOf(level);
}

/**
 * How an upstream reaches this request's client while serving it: its server→client requests go to the client
 * when the client's connection can carry them (and declared the capability), its notifications go to the client
 * on the request's stream.
 */
function relayTo(
  req: ConnectionRequest,
  serving: ServingContext,
  provider: GatewaySessionProvider,
  capabilities: ClientCapabilities | undefined,
  expose: (notification: Notification, provider: GatewaySessionProvider) => Promise<Notification>,
  logLevel: LoggingLevel | null | undefined,
): UpstreamCaller {
  return {
    request: async (request, signal) => {
      if (!serving.canRequest) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidRequest,
          `${request.method} from provider ${provider.providerSlug} cannot reach a client on a per-request connection.`,
        );
      }
      assertDeclared(request.method, capabilities);
      return req.send(request, { signal, timeout: clientAnswerMs() });
    },
    notify: (notification: Notification) => {
      if (notification.method === "notifications/progress") return; // relayed through onprogress
      if (!logLevelAllows(logLevel, notification)) return;
      void expose(notification, provider)
        .then((exposed) => req.notify(exposed))
        .catch(() => undefined);
    },
  };
}

/** Tells the client (a log message, if its level lets a warning through) and the server log who was left out. */
async function reportFailures(
  ctx: ServerContext,
  serving: ServingContext,
  failures: ProviderFailure[],
  logLevel: LoggingLevel | null | undefined,
) {
  for (const { provider, error } of failures) {
    const text = `Provider ${provider.providerSlug} was left out: ${error.message}`;
    serving.log.warn({ provider: provider.providerSlug, code: error.code }, text);
    const forClient =
      error instanceof ReauthenticationNeeded
        ? `Provider ${provider.providerSlug} was left out: ${error.clientMessage}`
        : text;
    const message = {
      method: "notifications/message",
      params: { level: "warning", logger: "toolplane", data: forClient },
    };
    if (logLevelAllows(logLevel, message)) await ctx.mcpReq.notify(message as never).catch(() => undefined);
  }
}

/**
 * What the session declares of what its providers serve, told a client at initialize (2025) and server/discover
 * (2026-07-28):
 * - tools, prompts and resources with `listChanged`, always: the gateway answers their lists itself (merged, empty
 *   without providers) and announces their changes, providers added to the session later included (see
 *   SESSION_LIST_CHANGES), so a session that starts with none, or with none offering prompts, may offer some later;
 * - logging, always: the gateway sends log messages of its own (providers left out of an answer, see reportFailures),
 *   which MCP requires the capability for, and serves logging/setLevel for them (an upstream without logging is not
 *   asked);
 * - completions and `resources.subscribe` when at least one provider offers them; a request for a provider without
 *   them is answered by the gateway (an empty completion; a subscription refused, naming the provider).
 * A provider that cannot be described now (down, hung) counts as offering what its server declared when last
 * connected, and one this process never connected as offering both: so an upstream that comes and goes does not
 * make the declaration flip, and declaring too much costs a client an empty answer, where declaring too little
 * would hide what the provider serves from a 2025 client for its whole connection (fixed at initialize).
 * `described` null (a request other than initialize and server/discover, whose server is not described): both, so
 * that the request is served; the client asks only what it was told at initialize or server/discover.
 */
function sessionCapabilities(described: Described[] | null): ServerCapabilities {
  const offers = (has: (capabilities: ServerCapabilities) => unknown) =>
    described === null ||
    described.some((d) => {
      const capabilities = d.upstream ? d.capabilities : d.lastOffered;
      return capabilities === undefined || !!has(capabilities);
    });
  return {
    tools: { listChanged: true },
    prompts: { listChanged: true },
    resources: { listChanged: true, ...(offers((c) => c.resources?.subscribe) ? { subscribe: true } : {}) },
    logging: {},
    ...(offers((c) => c.completions) ? { completions: {} } : {}),
  };
}

/** The upstreams' instructions: a one-provider session's as its server gave them, else each under its provider. */
function sessionInstructions(session: GatewaySession, described: Described[]): string | undefined {
  if (session.providers.length === 1) return described[0]?.instructions;
  const parts = described.filter((d) => d.instructions).map((d) => `## ${d.provider.providerSlug}\n${d.instructions}`);
  return [BASE_INSTRUCTIONS, ...parts].join("\n\n");
}

/**
 * A capability of the session made of its upstreams': whatever any of them offers, merged member by member (a flag
 * is set when any of them sets it). For `tasks` (each task is routed to its own upstream), `extensions` and
 * `experimental` (what they put in `_meta` and resources passes through; a method of their own reaches the upstream
 * that owns it, see methodOwners).
 */
function mergedCapability(offered: (Params | undefined)[]): Params | undefined {
  const merge = (into: Params, from: Params) => {
    for (const [key, value] of Object.entries(from)) {
      if (value && typeof value === "object" && !Array.isArray(value)) {
        into[key] = merge({ ...((into[key] as Params | undefined) ?? {}) }, value as Params);
      } else into[key] = typeof value === "boolean" ? into[key] === true || value : value;
    }
    return into;
  };
  const present = offered.filter((offer): offer is Params => !!offer);
  return present.length > 0 ? present.reduce((all, offer) => merge(all, offer), {}) : undefined;
}

/**
 * The providers that may own `method`, one MCP does not define: those that declare an extension or an `experimental`
 * capability, MCP's only ways for a server to offer methods of its own (MCP 2026-07-28 basic/versioning; SEP-2133).
 * MCP does not tie a method to its extension, but the official extensions name theirs after themselves (SEP-2663
 * reserves `tasks/` for `io.modelcontextprotocol/tasks`; the Skills extension's methods have rules of their own,
 * see skills.ts): when some providers declare one named like the method's first segment (or that prefixes the
 * method whole), only those.
 */
function methodOwners(method: string, described: Described[]): Described[] {
  const family = method.split("/")[0];
  const declared = ({ capabilities }: Described) => {
    const { extensions, experimental } = capabilities as Params;
    return [
      ...Object.keys((extensions as Params | undefined) ?? {}),
      ...Object.keys((experimental as Params | undefined) ?? {}),
    ];
  };
  const names = (key: string) => key === family || key.endsWith(`/${family}`) || method.startsWith(`${key}/`);
  const offering = described.filter((d) => declared(d).length > 0);
  const named = offering.filter((d) => declared(d).some(names));
  return named.length > 0 ? named : offering;
}

/**
 * An upstream's result as the session's: without the upstream's own identity in `_meta` (the gateway's server adds
 * its own), and with every upstream URI made session-wide (contents, resource links, embedded resources).
 */
function exposeUris(
  upstreamResult: Record<string, unknown>,
  names: Namespaces,
  providerId: string | null,
): Record<string, unknown> {
  const result = withoutMetaKey(upstreamResult, SERVER_INFO_META_KEY);
  if (!providerId || names.uri(providerId, "") === "") return result;
  const expose = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(expose);
    if (!value || typeof value !== "object") return value;
    const entry = value as Params;
    const out: Params = { ...entry };
    if (typeof entry.uri === "string") out.uri = names.uri(providerId, entry.uri);
    if (entry.resource) out.resource = expose(entry.resource);
    return out;
  };
  return {
    ...result,
    ...(Array.isArray(result.contents) ? { contents: expose(result.contents) } : {}),
    ...(Array.isArray(result.content) ? { content: expose(result.content) } : {}),
    ...(Array.isArray(result.messages)
      ? { messages: (result.messages as Params[]).map((m) => ({ ...m, content: expose(m.content) })) }
      : {}),
  };
}

/**
 * Task ids in an upstream's message made session-wide (reversibly, like URIs): a task (`taskId`: a 2025 task, or the
 * Tasks extension's CreateTaskResult and DetailedTask), a created task (`task.taskId`), a task list
 * (`tasks[].taskId`) and a message related to a task (`_meta` related-task). A DetailedTask's inline `result` gets
 * session-wide URIs, as the result of the call would have.
 */
export function exposeTaskIds(message: Params, names: Namespaces, providerId: string | null): Params {
  if (!providerId || names.uri(providerId, "") === "") return message;
  const expose = (task: unknown) =>
    task && typeof task === "object" && typeof (task as Params).taskId === "string"
      ? { ...(task as Params), taskId: names.qualified(providerId, (task as Params).taskId as string) }
      : task;
  const out = expose(message) as Params;
  if (typeof message.taskId === "string" && out.result && typeof out.result === "object")
    out.result = exposeUris(out.result as Params, names, providerId);
  if (out.task) out.task = expose(out.task);
  if (Array.isArray(out.tasks)) out.tasks = out.tasks.map(expose);
  const meta = out._meta as Params | undefined;
  if (meta?.[RELATED_TASK_META_KEY])
    out._meta = { ...meta, [RELATED_TASK_META_KEY]: expose(meta[RELATED_TASK_META_KEY]) };
  return out;
}

function asProtocolError(error: unknown, provider?: GatewaySessionProvider): unknown {
  if (error instanceof ProtocolError) return error;
  // A provider that needs re-authentication is named by its message, and the client (only it) gets the link.
  if (error instanceof ReauthenticationNeeded)
    return new ProtocolError(ProtocolErrorCode.InternalError, error.clientMessage);
  if (error instanceof UpstreamFailure) {
    const message = provider ? `Provider ${provider.providerSlug}: ${error.message}` : error.message;
    if (error.code === "upstream_error") return new ProtocolError(error.rpcCode ?? -32603, message, error.rpcData);
    return new ProtocolError(ProtocolErrorCode.InternalError, message);
  }
  return error;
}

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

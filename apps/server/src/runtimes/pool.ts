import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import {
  type Client,
  type ClientCapabilities,
  type Implementation,
  type LoggingLevel,
  type McpSubscription,
  type Notification,
  type Progress,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  type ServerCapabilities,
  type StandardSchemaV1,
  SUBSCRIPTION_ID_META_KEY,
  type SubscriptionFilter,
  type Transport,
} from "@modelcontextprotocol/client";
import { LoggingLevelSchema } from "@modelcontextprotocol/core";
import { linkedAbortController } from "../lib/abort-signal-any.ts";
import { type Freshness, freshnessOf, mergedFreshness, STALE, UNLIMITED } from "../lib/freshness.ts";
import { newId } from "../lib/ids.ts";
import { upstreamListingCut } from "../observability/gateway.ts";
import { upstreamConnection } from "../observability/metrics.ts";
import { createClient, createTransport, directTargetOf, type UpstreamTarget } from "./connect.ts";
import { callDirect, DirectCallRedirected, type DirectTarget, directCallableName } from "./direct-call.ts";
import { mcpParamHeaders } from "./param-headers.ts";

/** Why an upstream request produced no result; the codes are the tool call `error.code` values. */
export class UpstreamFailure extends Error {
  constructor(
    /**
     * `provider_removed`: the session or its provider was removed while the call was under way; `cancelled`: the
     * client cancelled the request; `shutdown`: this server stopped before the upstream answered.
     */
    readonly code:
      | "timeout"
      | "upstream_unavailable"
      | "upstream_error"
      | "provider_removed"
      | "cancelled"
      | "shutdown",
    message: string,
    /** The upstream's JSON-RPC error code (and data), for `upstream_error`. */
    readonly rpcCode?: number,
    readonly rpcData?: unknown,
  ) {
    super(message);
  }
}

const envMs = (name: string, fallback: number): number => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};
/**
 * How long an upstream may stay silent on one request, connecting included (TOOLPLANE_UPSTREAM_TIMEOUT_MS, default
 * 30 s); each progress notification starts the wait again.
 */
export const upstreamTimeoutMs = () => envMs("TOOLPLANE_UPSTREAM_TIMEOUT_MS", 30_000);
/** The hard limit on one request however much progress it reports (TOOLPLANE_UPSTREAM_MAX_MS, default 1 h). */
export const upstreamMaxMs = () => envMs("TOOLPLANE_UPSTREAM_MAX_MS", 3_600_000);
/**
 * How long a client may take to answer an upstream's question relayed to it: sampling, elicitation, roots
 * (TOOLPLANE_CLIENT_ANSWER_MS, default 10 min). MCP sets no limit (2025-11-25 client/elicitation; 2026-07-28
 * basic/patterns/mrtr), and a person may be filling in a form or signing in elsewhere; meanwhile the upstream's
 * silence is not held against it (see SilenceClock).
 */
export const clientAnswerMs = () => envMs("TOOLPLANE_CLIENT_ANSWER_MS", 600_000);

/**
 * The downstream request an upstream request is made for. Server→client requests (sampling, elicitation, roots)
 * and notifications (logging, progress-less messages) an upstream sends on that request's stream run in its async
 * context, so they reach the client whose request caused them.
 */
export interface UpstreamCaller {
  /** Answers a server→client request; rejects when the client cannot take it. */
  request(request: { method: string; params?: Record<string, unknown> }, signal: AbortSignal): Promise<unknown>;
  notify(notification: Notification): void;
}
export const upstreamCaller = new AsyncLocalStorage<UpstreamCaller>();

export interface UpstreamRequestOptions {
  timeoutMs: number;
  maxTotalMs?: number;
  signal?: AbortSignal;
  onprogress?: (progress: Progress) => void;
  /** A tools/call's tool's input schema: the source of its `Mcp-Param-*` headers toward a 2026-07-28 server. */
  toolSchema?: unknown;
}

type Item = Record<string, unknown>;
/**
 * A list as an upstream connection keeps it: read when, kept until when (see Upstream.list), and how long its
 * pages said a client may consider it fresh.
 */
interface CachedList {
  items: Item[];
  readAt: number;
  until: number;
  freshness: Freshness;
}
/**
 * How long a list is kept of an upstream that did not declare it announces changes of it
 * (TOOLPLANE_UPSTREAM_LIST_CACHE_MS, default 30 s).
 */
export const listCacheMs = () => envMs("TOOLPLANE_UPSTREAM_LIST_CACHE_MS", 30_000);

/**
 * The most pages of one list the gateway reads of an upstream (at a typical 50-100 items a page, tens of thousands
 * of items); a server with more is listed as far as that.
 */
const MAX_LIST_PAGES = 1_000;

/** The lists an upstream is asked for, with the result member that holds each. */
export const LISTS = {
  "tools/list": "tools",
  "prompts/list": "prompts",
  "resources/list": "resources",
  "resources/templates/list": "resourceTemplates",
} as const;
export type ListMethod = keyof typeof LISTS;
/** The capability a server must advertise for each list. */
const LIST_CAPABILITY: Record<ListMethod, keyof ServerCapabilities> = {
  "tools/list": "tools",
  "prompts/list": "prompts",
  "resources/list": "resources",
  "resources/templates/list": "resources",
};
const LIST_CHANGED: Record<string, ListMethod[]> = {
  "notifications/tools/list_changed": ["tools/list"],
  "notifications/prompts/list_changed": ["prompts/list"],
  "notifications/resources/list_changed": ["resources/list", "resources/templates/list"],
};
/** Server→client requests the gateway relays, with the client capability each needs. */
export const RELAYED_REQUESTS = {
  "sampling/createMessage": "sampling",
  "elicitation/create": "elicitation",
  "roots/list": "roots",
} as const;

/**
 * Results are passed through as the upstream sent them, and params as the client sent them (methods of extensions
 * the gateway serves): no schema strips a field the gateway does not know.
 */
export const unchecked: StandardSchemaV1<unknown, Record<string, unknown>> = {
  "~standard": { version: 1, vendor: "toolplane", validate: (value) => ({ value: value as Record<string, unknown> }) },
};

/**
 * One upstream MCP server as reached with one set of credentials, config and client capabilities: a lazily
 * (re)connected client of whichever era the server speaks.
 */
export class Upstream {
  /** The current connection (`prn_…`), recorded on tool calls; null until connected. */
  runId: string | null = null;
  /**
   * The capabilities the server declared when this connection was last opened: kept while it is down or being
   * connected again, so that what the session declares does not change with it (see sessionCapabilities).
   */
  lastOffered: ServerCapabilities | undefined;
  /** Told of the server's identity (its `serverInfo`) each time a connection to it opens. */
  onIdentity?: (serverInfo: Implementation) => void;
  lastUsedAt = Date.now();
  private inFlight = 0;
  private client: Promise<Client> | null = null;
  private generation = 0;
  private readonly lists = new Map<ListMethod, CachedList>();
  private readonly peers = new Set<UpstreamCaller>();
  /**
   * Told of each task status the upstream announces, once per notification however many clients share this
   * connection (each of them hears it too): `notifications/tasks/status` (MCP 2025-11-25: the Task), or the Tasks
   * extension's `notifications/tasks` on the listen stream (2026-07-28: the DetailedTask, its outcome included).
   */
  onTaskStatus?: (task: { taskId: string; status: string } & Record<string, unknown>) => void;
  /** The status each of the latest TASKS_REMEMBERED tasks announced last: see announcedTaskStatus. */
  private readonly taskStatuses = new Map<string, string>();
  /** Upstream resource URIs clients subscribed to through this connection, with how many subscriptions each has. */
  private readonly subscribed = new Map<string, number>();
  /** A 2026-07-28 upstream's task ids clients follow through this connection, with how many subscriptions each has. */
  private readonly subscribedTasks = new Map<string, number>();
  /** A 2026-07-28 upstream's `subscriptions/listen` stream (list changes, the subscribed resources and tasks). */
  private subscription: McpSubscription | null = null;
  private relistening: Promise<void> = Promise.resolve();
  /** The log level each client connection asked of this (2025) upstream, and the level the upstream was given. */
  private readonly logLevels = new Map<string, LoggingLevel>();
  private sentLogLevel: LoggingLevel | undefined;
  private logLevelSent: Promise<void> = Promise.resolve();

  constructor(
    private readonly target: UpstreamTarget,
    private readonly capabilities: ClientCapabilities,
  ) {}

  get idle(): boolean {
    return this.inFlight === 0 && this.peers.size === 0;
  }

  /**
   * A client connection that takes what the upstream sends outside any request: notifications (list changes,
   * resource updates, log messages) reach every such peer; a server→client request (e.g. `roots/list` after
   * initialize) goes to the peer that joined last (an upstream connection whose peer declared roots has only it).
   */
  listen(peer: UpstreamCaller): () => void {
    this.peers.add(peer);
    return () => this.peers.delete(peer);
  }

  /** The server's capabilities and instructions, and whether it speaks 2026-07-28, connecting first if needed. */
  async describe(
    timeoutMs: number,
  ): Promise<{ capabilities: ServerCapabilities; instructions?: string; modern: boolean }> {
    return this.run({ timeoutMs }, async (client) => ({
      capabilities: client.getServerCapabilities() ?? {},
      instructions: client.getInstructions(),
      modern: client.getProtocolEra() === "modern",
    }));
  }

  /**
   * Connects if needed and resolves once what the server announces outside any request is heard: a 2026-07-28
   * server's listen stream is open (or failed to open). A 2025 server's GET stream is opened by connecting, with no
   * acknowledgement to wait for.
   */
  async listening(timeoutMs: number): Promise<void> {
    await this.describe(timeoutMs);
    await this.relistening.catch(() => undefined);
  }

  /**
   * The status task `taskId` announced last on this connection, if it did lately: one announced before the task's
   * call was recorded found no record to write into.
   */
  announcedTaskStatus(taskId: string): string | undefined {
    return this.taskStatuses.get(taskId);
  }

  /**
   * Every item of a list (all pages), cached for the connection: until the upstream announces a change if it
   * declared it would (`listChanged`), else for TOOLPLANE_UPSTREAM_LIST_CACHE_MS (a server need not announce, and
   * its list may change meanwhile). `maxAgeMs` asks for a list read no longer ago than that.
   */
  async list(method: ListMethod, timeoutMs: number, maxAgeMs = Number.POSITIVE_INFINITY): Promise<Item[]> {
    const cached = this.lists.get(method);
    const now = Date.now();
    if (cached && this.client && now < cached.until && now - cached.readAt <= maxAgeMs) return cached.items;
    return this.run({ timeoutMs }, async (client, options) => {
      const capability = client.getServerCapabilities()?.[LIST_CAPABILITY[method]] as { listChanged?: boolean };
      const readAt = Date.now();
      if (!capability) {
        // Capabilities hold for the connection: nothing to read again until it is replaced.
        this.lists.set(method, { items: [], readAt, until: Number.POSITIVE_INFINITY, freshness: UNLIMITED });
        return [];
      }
      const items: Item[] = [];
      const pages: Freshness[] = [];
      const cursors = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await client.request({ method, params: cursor ? { cursor } : {} }, unchecked, options);
        items.push(...((page[LISTS[method]] as Item[] | undefined) ?? []));
        pages.push(freshnessOf(page, Date.now()));
        cursor = typeof page.nextCursor === "string" ? page.nextCursor : undefined;
        if (cursor === undefined) break;
        // A server that hands out a cursor again would be read until the deadline, its items piling up meanwhile.
        if (cursors.has(cursor) || pages.length >= MAX_LIST_PAGES) {
          upstreamListingCut(this, method, pages.length, cursors.has(cursor) ? "repeated cursor" : "page limit");
          break;
        }
        cursors.add(cursor);
      } while (cursor);
      const until = capability.listChanged === true ? Number.POSITIVE_INFINITY : readAt + listCacheMs();
      this.lists.set(method, { items, readAt, until, freshness: mergedFreshness(pages) });
      return items;
    });
  }

  /**
   * How long a client may consider the list as kept fresh, by its pages' caching hints (MCP 2026-07-28): stale at
   * once when none is kept (it was dropped on an announced change, or never read).
   */
  listFreshness(method: ListMethod): Freshness {
    return this.lists.get(method)?.freshness ?? STALE;
  }

  /**
   * Any request, its result passed through unvalidated; an `input_required` result is returned as it came. A
   * `tools/call` to a server over Streamable HTTP is a direct call (see direct-call.ts) unless
   * TOOLPLANE_MCP_FAST_CALLS=0; an upstream that redirects one gets its calls through the SDK client from then on.
   */
  async request(
    method: string,
    params: Record<string, unknown> | undefined,
    options: UpstreamRequestOptions,
  ): Promise<Record<string, unknown>> {
    return this.run(options, async (client, requestOptions) => {
      const modernCall = method === "tools/call" && client.getProtocolEra() === "modern";
      const headers = modernCall ? mcpParamHeaders(options.toolSchema, params?.arguments) : {};
      const direct = method === "tools/call" ? directTargets.get(client) : undefined;
      if (direct && (!modernCall || directCallableName(params?.name)) && process.env.TOOLPLANE_MCP_FAST_CALLS !== "0") {
        try {
          return await callDirect(direct, params ?? {}, {
            ...requestOptions,
            headers,
            onnotification: this.onNotification,
          });
        } catch (error) {
          if (!(error instanceof DirectCallRedirected)) throw error;
          directTargets.delete(client);
        }
      }
      // The upstream's silence is timed here rather than by the SDK client, so that it can stop while a question
      // of this request's is with the client (the SDK's own timer only stops for progress).
      const silence = new SilenceClock(requestOptions.timeout, requestOptions.signal);
      const caller = upstreamCaller.getStore();
      if (caller) questionsOf.set(caller, silence);
      try {
        return await client.request({ method, params }, unchecked, {
          ...requestOptions,
          signal: silence.signal,
          timeout: requestOptions.maxTotalTimeout,
          resetTimeoutOnProgress: false,
          onprogress: (progress) => {
            silence.restart();
            requestOptions.onprogress?.(progress);
          },
          headers,
          allowInputRequired: true,
        });
      } catch (error) {
        // Only relayTaskResults' stand-in: an upstream's own error of that code stays an error.
        const created =
          error instanceof ProtocolError && error.code === TASK_CREATED
            ? (error.data as Record<string, unknown> | undefined)
            : undefined;
        if (created?.resultType === "task") return created;
        throw error;
      } finally {
        silence.stop();
        if (caller && questionsOf.get(caller) === silence) questionsOf.delete(caller);
      }
    });
  }

  /**
   * Sets the log level a client connection (`client`; null: a request without one) wants of this 2025 upstream, or
   * forgets it (`level` null). A 2025 server has one level per MCP session, shared by every client of this
   * connection: it is given the most verbose level any of them wants (each client gets only what it asked for: the
   * gateway filters what it relays), and given it again when it reconnects.
   */
  setLogLevel(client: string | null, level: LoggingLevel | null, timeoutMs: number): Promise<void> {
    if (client !== null) {
      if (level) this.logLevels.set(client, level);
      else this.logLevels.delete(client);
    }
    const once = client === null && level ? level : undefined;
    // One at a time, each deciding what to send when its turn comes: two sent at once could arrive in either order.
    const sent = this.logLevelSent
      .catch(() => undefined)
      .then(async () => {
        const wanted = mostVerbose([...this.logLevels.values(), ...(once ? [once] : [])]);
        if (!wanted || wanted === this.sentLogLevel) return;
        this.sentLogLevel = wanted;
        await this.run({ timeoutMs }, (c, options) =>
          c.request({ method: "logging/setLevel", params: { level: wanted } }, unchecked, options),
        ).catch((error: unknown) => {
          if (this.sentLogLevel === wanted) this.sentLogLevel = undefined;
          throw error;
        });
      });
    this.logLevelSent = sent;
    return sent;
  }

  /**
   * Subscribes to updates of an upstream resource: once for every client that asks through this connection, in
   * the upstream's era (`resources/subscribe` for a 2025 server, its listen stream's filter for a 2026-07-28 one).
   */
  subscribe(uri: string, timeoutMs: number): Promise<void> {
    return this.hold(this.subscribed, uri, () => this.changeSubscription(timeoutMs, "resources/subscribe", uri));
  }

  /** Ends one subscription to an upstream resource; the upstream hears of it when the last one ends. */
  unsubscribe(uri: string, timeoutMs: number): Promise<void> {
    return this.release(this.subscribed, uri, () => this.changeSubscription(timeoutMs, "resources/unsubscribe", uri));
  }

  /**
   * Subscribes to the status notifications of a 2026-07-28 upstream's task (`notifications/tasks`, Tasks extension):
   * its listen stream names the task (`taskIds`) while any client of this connection follows it. (A 2025 server
   * announces its tasks' statuses unasked.)
   */
  subscribeTask(taskId: string, timeoutMs: number): Promise<void> {
    return this.hold(this.subscribedTasks, taskId, () => this.changeSubscription(timeoutMs));
  }

  /** Ends one subscription to a task's status notifications. */
  unsubscribeTask(taskId: string, timeoutMs: number): Promise<void> {
    return this.release(this.subscribedTasks, taskId, () => this.changeSubscription(timeoutMs));
  }

  /** Counts one subscription to `key`; the first one `start`s it (and is not counted if that fails). */
  private async hold(held: Map<string, number>, key: string, start: () => Promise<void>): Promise<void> {
    const count = held.get(key) ?? 0;
    held.set(key, count + 1);
    if (count > 0) return;
    try {
      await start();
    } catch (error) {
      held.delete(key);
      throw error;
    }
  }

  /** Counts one subscription to `key` off; the last one `stop`s it. */
  private async release(held: Map<string, number>, key: string, stop: () => Promise<void>): Promise<void> {
    const count = held.get(key) ?? 0;
    if (count > 1) held.set(key, count - 1);
    if (count !== 1) return;
    held.delete(key);
    await stop();
  }

  /** What the subscriptions changed, told the upstream: a 2026-07-28 one's listen stream, or a 2025 one's `method`. */
  private changeSubscription(timeoutMs: number, method?: string, uri?: string): Promise<void> {
    const generation = this.generation;
    return this.run({ timeoutMs }, async (client, options) => {
      if (client.getProtocolEra() === "modern") await this.relisten(client, generation);
      else if (method) await client.request({ method, params: { uri } }, unchecked, options);
    });
  }

  /**
   * (Re)opens a 2026-07-28 upstream's listen stream with what this connection needs: the list changes the server
   * announces (they clear the cached lists) and updates of the subscribed resources. A stream's filter is fixed,
   * so a changed set of resources opens a new stream before the old one closes: no update falls between them. A
   * dropped stream is opened again (and the lists fetched again: what changed meanwhile is unknown).
   * Opened outside the context of the client request that led to it (connecting, subscribing): what arrives on the
   * stream runs in the context that opened it, and it is every peer's, not that request's (see onNotification).
   */
  private relisten(client: Client, generation: number): Promise<void> {
    const next = upstreamCaller.exit(() =>
      this.relistening
        .catch(() => undefined)
        .then(async () => {
          if (this.generation !== generation) return;
          const capabilities = client.getServerCapabilities() ?? {};
          const filter: SubscriptionFilter = {};
          if (capabilities.tools?.listChanged) filter.toolsListChanged = true;
          if (capabilities.prompts?.listChanged) filter.promptsListChanged = true;
          if (capabilities.resources?.listChanged) filter.resourcesListChanged = true;
          if (capabilities.resources?.subscribe && this.subscribed.size > 0) {
            filter.resourceSubscriptions = [...this.subscribed.keys()];
          }
          // The Tasks extension's member of the filter (tasks.md "Task Status Notifications"), unknown to the SDK.
          if (this.subscribedTasks.size > 0) Object.assign(filter, { taskIds: [...this.subscribedTasks.keys()] });
          const previous = this.subscription;
          const current = Object.keys(filter).length > 0 ? await client.listen(filter) : null;
          if (this.generation !== generation) {
            await current?.close(); // the connection was replaced meanwhile; its successor listens for itself
            return;
          }
          this.subscription = current;
          await previous?.close();
          void current?.closed.then((how) => {
            if (how !== "remote" || this.subscription !== current || this.generation !== generation) return;
            this.subscription = null;
            this.lists.clear();
            setTimeout(() => void this.relisten(client, generation).catch(() => undefined), 1_000).unref();
          });
        }),
    );
    this.relistening = next;
    return next;
  }

  /** A notification to the upstream (e.g. `notifications/roots/list_changed`). */
  async notify(notification: Notification, timeoutMs: number): Promise<void> {
    await this.run({ timeoutMs }, (client) => client.notification(notification));
  }

  async close(): Promise<void> {
    const client = this.client;
    this.reset();
    await client?.then((c) => c.close()).catch(() => undefined);
  }

  /**
   * Runs one request within its deadlines. An upstream that forgot our MCP session (HTTP 404 or 400 on its session
   * id) is re-initialised and the request sent again once: it never reached the server's handler. A connection
   * that failed mid-request is dropped at once, so the next request reconnects.
   */
  private async run<T>(
    options: UpstreamRequestOptions,
    fn: (
      client: Client,
      requestOptions: {
        signal: AbortSignal;
        timeout: number;
        maxTotalTimeout: number;
        resetTimeoutOnProgress: boolean;
        onprogress?: (progress: Progress) => void;
      },
    ) => Promise<T>,
  ): Promise<T> {
    this.inFlight++;
    this.lastUsedAt = Date.now();
    const maxTotalMs = options.maxTotalMs ?? options.timeoutMs;
    const deadline = timeoutSignal(maxTotalMs, options.signal);
    const { signal } = deadline;
    try {
      for (let attempt = 0; ; attempt++) {
        const client = await abortable(this.connected(options.timeoutMs), signal);
        try {
          return await fn(client, {
            signal,
            timeout: options.timeoutMs,
            maxTotalTimeout: maxTotalMs,
            resetTimeoutOnProgress: true,
            ...(options.onprogress ? { onprogress: options.onprogress } : {}),
          });
        } catch (error) {
          const answered = rpcErrorOf(error);
          if (answered) throw answered;
          if (lostConnection(error)) void this.close();
          if (attempt > 0 || !lostSession(error)) throw error;
        }
      }
    } catch (error) {
      throw classify(error, options, deadline.timedOut());
    } finally {
      deadline.clear();
      this.inFlight--;
      this.lastUsedAt = Date.now();
    }
  }

  private connected(timeoutMs: number): Promise<Client> {
    if (this.client) return this.client;
    const connecting = this.open(timeoutMs);
    connecting.catch(() => {
      if (this.client === connecting) this.reset();
    });
    this.client = connecting;
    return connecting;
  }

  /**
   * A notification the upstream sent outside progress: list changes drop the cached list; it goes to the client
   * whose request it came with, or else to every peer.
   */
  private readonly onNotification = (received: Notification): void => {
    const notification = withoutSubscriptionId(received);
    for (const method of LIST_CHANGED[notification.method] ?? []) this.lists.delete(method);
    if (TASK_STATUS_NOTIFICATIONS.has(notification.method)) this.taskAnnounced(notification.params);
    // Only what comes with a request's response runs in its context: the listen stream is opened outside any.
    const caller = upstreamCaller.getStore();
    if (caller) caller.notify(notification);
    else for (const peer of this.peers) peer.notify(notification);
  };

  private taskAnnounced(task: Record<string, unknown> | undefined): void {
    if (typeof task?.taskId !== "string" || typeof task.status !== "string") return;
    this.taskStatuses.delete(task.taskId); // (re)inserted last: the oldest is the first to go
    this.taskStatuses.set(task.taskId, task.status);
    if (this.taskStatuses.size > TASKS_REMEMBERED)
      this.taskStatuses.delete(this.taskStatuses.keys().next().value ?? "");
    this.onTaskStatus?.(task as { taskId: string; status: string });
  }

  private async open(timeoutMs: number): Promise<Client> {
    const client = createClient(this.target, CLIENT_NAME, this.capabilities);
    for (const [method, capability] of Object.entries(RELAYED_REQUESTS)) {
      if (!this.capabilities[capability]) continue;
      client.setRequestHandler(
        method as keyof typeof RELAYED_REQUESTS,
        (async (
          request: { method: string; params?: Record<string, unknown> },
          ctx: { mcpReq: { signal: AbortSignal } },
        ) => {
          const own = upstreamCaller.getStore();
          const caller = own ?? [...this.peers].at(-1);
          if (!caller) throw new ProtocolError(-32603, `No client is connected to answer ${request.method}.`);
          const ask = () => caller.request(request, ctx.mcpReq.signal);
          const silence = own && questionsOf.get(own);
          return silence ? silence.whileAsking(ask) : ask();
        }) as never,
      );
    }
    client.fallbackNotificationHandler = async (received) => this.onNotification(received);
    const transport = createTransport(this.target);
    // A crashed child or dropped connection is forgotten, so the next request reconnects; a close of an older
    // connection leaves its successor alone.
    const generation = ++this.generation;
    client.onclose = () => {
      if (this.generation === generation) this.reset();
    };
    // A timer cleared once connected (see timeoutSignal): the first caller's request is not kept for timeoutMs.
    const deadline = timeoutSignal(timeoutMs);
    const abort = () => void client.close();
    deadline.signal.addEventListener("abort", abort, { once: true });
    try {
      // Outside the caller's context: streams the connection opens (the 2025 GET stream) outlive this request, and
      // what arrives on them is not the caller's.
      await upstreamCaller.exit(() =>
        client.connect(transport, { timeout: timeoutMs, signal: deadline.signal } as never),
      );
    } catch (error) {
      await client.close().catch(() => undefined);
      throw deadline.signal.aborted ? new SdkError(SdkErrorCode.RequestTimeout, "connect timed out") : error;
    } finally {
      deadline.clear();
      deadline.signal.removeEventListener("abort", abort);
    }
    if (client.getProtocolEra() === "modern") relayTaskResults(transport);
    this.runId = newId("prn");
    this.lastOffered = client.getServerCapabilities() ?? {};
    const identity = client.getServerVersion();
    if (identity) this.onIdentity?.(identity);
    // A direct call answers only a ping of what a 2025 server may ask on its stream: a connection that relays
    // sampling, elicitation or roots keeps the calls to such a server on the SDK client.
    const direct = directTargetOf(this.target, client, CLIENT_NAME, this.capabilities);
    const asks = client.getProtocolEra() !== "modern" && Object.keys(relayedCapabilities(this.capabilities)).length > 0;
    if (direct && !asks) directTargets.set(client, direct);
    upstreamConnection(this, true);
    // What this connection listens to: a modern server's listen stream; a 2025 server that restarted forgot the
    // subscriptions of the connection it replaces.
    if (client.getProtocolEra() === "modern") {
      void this.relisten(client, generation).catch(() => undefined);
    } else {
      for (const uri of this.subscribed.keys()) {
        void client
          .request({ method: "resources/subscribe", params: { uri } }, unchecked, { timeout: timeoutMs })
          .catch(() => undefined);
      }
      // A new MCP session starts at the server's default level: it is given the one its clients asked for.
      if (this.logLevels.size > 0) void this.setLogLevel(null, null, timeoutMs).catch(() => undefined);
    }
    return client;
  }

  private reset(): void {
    upstreamConnection(this, false);
    this.sentLogLevel = undefined;
    this.generation++;
    this.client = null;
    this.lists.clear();
    this.runId = null;
    void this.subscription?.close().catch(() => undefined);
    this.subscription = null;
  }
}

/** The code of the stand-in error that carries a CreateTaskResult past the SDK client: see relayTaskResults. */
const TASK_CREATED = -32099;

/**
 * The SDK client (2.4.0) fails a 2026-07-28 result of any `resultType` but `complete` and `input_required` (its
 * codec's decodeResult), so a CreateTaskResult of the Tasks extension (`resultType: "task"`, SEP-2663) would never
 * reach the gateway: such a response reaches the client as an error that carries it (TASK_CREATED, a code of
 * JSON-RPC's range for implementations), which request() turns back into the result. Only a request that declared
 * the extension gets one.
 */
function relayTaskResults(transport: Transport): void {
  const receive = transport.onmessage;
  if (!receive) return;
  transport.onmessage = (message, extra) => {
    const result = (message as { result?: Record<string, unknown> }).result;
    if (result?.resultType !== "task" || !("id" in message)) return receive(message, extra);
    const error = { code: TASK_CREATED, message: "The upstream created a task.", data: result };
    receive({ jsonrpc: "2.0", id: message.id, error }, extra);
  };
}

/** The notifications of a task's status: MCP 2025-11-25's, and the Tasks extension's (2026-07-28). */
const TASK_STATUS_NOTIFICATIONS = new Set(["notifications/tasks/status", "notifications/tasks"]);

/** MCP's log levels, most verbose first (the SDK's own list). */
export const LOG_LEVELS: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** The most verbose of `levels`, or undefined when there is none. */
function mostVerbose(levels: Iterable<LoggingLevel>): LoggingLevel | undefined {
  let most: LoggingLevel | undefined;
  for (const level of levels) if (!most || LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(most)) most = level;
  return most;
}

/**
 * How many tasks' announced statuses a connection remembers (see Upstream.announcedTaskStatus): they are needed only
 * while the calls that created them are being recorded, a few milliseconds.
 */
const TASKS_REMEMBERED = 256;

/** The name the gateway's upstream clients give (`clientInfo`). */
const CLIENT_NAME = "toolplane-gateway";
/** Connected clients whose tools/calls go direct (see Upstream.request), with where to. */
const directTargets = new WeakMap<Client, DirectTarget>();

/** A notification from an upstream's listen stream names that stream, which is the gateway's, not the client's. */
function withoutSubscriptionId(notification: Notification): Notification {
  const meta = notification.params?._meta as Record<string, unknown> | undefined;
  if (!meta || !(SUBSCRIPTION_ID_META_KEY in meta)) return notification;
  const { [SUBSCRIPTION_ID_META_KEY]: _gateways, ...kept } = meta;
  const { _meta: _dropped, ...params } = notification.params ?? {};
  return { ...notification, params: Object.keys(kept).length > 0 ? { ...params, _meta: kept } : params };
}

/**
 * The JSON-RPC error a 2026-07-28 upstream answered with a non-2xx status (404 for MethodNotFound, say), which the
 * SDK client reads as the answer only on a 400 and otherwise throws as an HTTP failure: it is the upstream's answer,
 * not a lost session, so it goes to the client as the upstream gave it. Only an error that answers a request (its
 * `id` is the request's, never null) counts: a 2025 server's "session not found" 404 has `id: null`, and is a lost
 * session.
 */
function rpcErrorOf(error: unknown): ProtocolError | undefined {
  if (!(error instanceof SdkHttpError) || typeof error.data.text !== "string") return undefined;
  try {
    const body = JSON.parse(error.data.text) as {
      jsonrpc?: unknown;
      id?: unknown;
      error?: { code?: unknown; message?: unknown; data?: unknown };
    };
    const rpc = body.jsonrpc === "2.0" && body.id !== null && body.id !== undefined ? body.error : undefined;
    if (!rpc || !Number.isSafeInteger(rpc.code) || typeof rpc.message !== "string") return undefined;
    return new ProtocolError(rpc.code as number, rpc.message, rpc.data);
  } catch {
    return undefined;
  }
}

/** The upstream answered 404 or 400 to a request on its session: it restarted or expired our session. */
function lostSession(error: unknown): boolean {
  return error instanceof SdkHttpError && (error.status === 404 || error.status === 400);
}

function lostConnection(error: unknown): boolean {
  return (
    lostSession(error) ||
    (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) ||
    error instanceof TypeError
  );
}

/**
 * A signal that aborts after `ms` (then `timedOut()`), or when `parent` does, until `clear` removes its timer and
 * its link to `parent` (one signal, where AbortSignal.any would make a second). Not AbortSignal.timeout: its timer cannot be
 * cleared and stays in Node's timer list until it fires or the signal is garbage collected by a full GC. Made
 * inside a call, that timer holds the call's AsyncLocalStorage store (upstreamCaller: the client's request and
 * response), so with the 1 h hard limit every finished call stayed reachable (537 of them in a heap snapshot
 * after 1,500 calls) and was promoted to the old generation by each young-generation GC.
 */
function timeoutSignal(
  ms: number,
  parent?: AbortSignal,
): { signal: AbortSignal; timedOut: () => boolean; clear: () => void } {
  const { controller, unlink } = linkedAbortController(parent);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException("The operation timed out.", "TimeoutError"));
  }, ms);
  timer.unref();
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    clear: () => {
      clearTimeout(timer);
      unlink();
    },
  };
}

/**
 * An upstream's silence on one request: aborts `signal` (as the SDK client's request timeout would) after `ms`
 * without an answer or progress, except while a question the upstream asked during the request is with the client,
 * who may take minutes to answer; the upstream gets `ms` again once it has the answer.
 */
class SilenceClock {
  private readonly controller: AbortController;
  private readonly unlink: () => void;
  private timer: NodeJS.Timeout | undefined;
  private asking = 0;
  private stopped = false;

  constructor(
    private readonly ms: number,
    parent: AbortSignal,
  ) {
    ({ controller: this.controller, unlink: this.unlink } = linkedAbortController(parent));
    this.restart();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The upstream spoke (progress): its silence counts from now, unless it is waiting on the client. */
  restart(): void {
    clearTimeout(this.timer);
    if (this.asking > 0 || this.stopped) return;
    this.timer = setTimeout(() => {
      this.controller.abort(new SdkError(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: this.ms }));
    }, this.ms);
    this.timer.unref();
  }

  /** `ask` (a question relayed to the client), the clock stopped until it is answered. */
  async whileAsking<T>(ask: () => Promise<T>): Promise<T> {
    this.asking++;
    clearTimeout(this.timer);
    try {
      return await ask();
    } finally {
      this.asking--;
      this.restart();
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unlink();
  }
}

/** The silence clock of the request a caller (a client's request) is making, while it runs: see SilenceClock. */
const questionsOf = new WeakMap<UpstreamCaller, SilenceClock>();

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function classify(error: unknown, options: UpstreamRequestOptions, hardLimitReached: boolean): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  if (options.signal?.aborted) {
    const reason = options.signal.reason;
    if (reason instanceof UpstreamFailure) return reason;
    return new UpstreamFailure("cancelled", "The client cancelled the request.");
  }
  if (hardLimitReached) {
    const limit = options.maxTotalMs ?? options.timeoutMs;
    return new UpstreamFailure("timeout", `The upstream MCP server did not finish within ${limit} ms.`);
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
    return new UpstreamFailure(
      "timeout",
      `The upstream MCP server did not answer within ${options.timeoutMs} ms (no result and no progress).`,
    );
  }
  if (error instanceof ProtocolError) {
    return new UpstreamFailure(
      "upstream_error",
      error.message.replace(/^(MCP error -?\d+: )+/, ""),
      error.code,
      error.data,
    );
  }
  const detail =
    error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed
      ? "closed the connection"
      : "could not be reached or started";
  return new UpstreamFailure("upstream_unavailable", `The upstream MCP server ${detail} during the request.`);
}

/**
 * What the upstream connection declares for a client: the relayed capabilities it declared, and its `extensions`
 * and `experimental` ones (an upstream may offer more to a client that supports an extension, such as MCP Apps'
 * UI). Part of an upstream connection's identity: a 2025 server hears them once, at initialize, and what a server
 * offered a client with an extension (its tools, its capabilities) is cached per connection, so it must not reach a
 * client without it. The price: each set of extensions a session's clients declare has connections of its own.
 */
export function upstreamCapabilities(capabilities: ClientCapabilities | undefined): ClientCapabilities {
  const { extensions, experimental } = (capabilities ?? {}) as Record<string, unknown>;
  return {
    ...relayedCapabilities(capabilities),
    ...(extensions ? { extensions } : {}),
    ...(experimental ? { experimental } : {}),
  } as ClientCapabilities;
}

/** Which of the relayed client capabilities a client declared (those the upstream may ask it to use). */
export function relayedCapabilities(capabilities: ClientCapabilities | undefined): ClientCapabilities {
  const relayed: ClientCapabilities = {};
  for (const capability of Object.values(RELAYED_REQUESTS)) {
    const value = capabilities?.[capability];
    if (value) Object.assign(relayed, { [capability]: value });
  }
  return relayed;
}

/**
 * The process's upstream connections, keyed by session provider, a fingerprint of the credentials and config
 * applied (a refreshed token or changed config opens a new connection; the old one idles out) and the client
 * capabilities declared to the upstream. Idle connections are closed (TOOLPLANE_UPSTREAM_IDLE_MS, default 5 min);
 * `closeAll` ends every one (stdio children included).
 */
export class UpstreamPool {
  private readonly upstreams = new Map<string, Upstream>();
  /** The identity each session provider's server gave when one of its connections last opened here. */
  private readonly identities = new Map<string, Implementation>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly idleMs = envMs("TOOLPLANE_UPSTREAM_IDLE_MS", 300_000)) {}

  /** `owner`: the client connection an upstream connection is kept for (one whose client declared roots). */
  get(
    sessionProviderId: string,
    target: UpstreamTarget,
    capabilities: ClientCapabilities = {},
    owner: string | null = null,
  ): Upstream {
    const fingerprint = createHash("sha256")
      .update(JSON.stringify([target, capabilities, owner]))
      .digest("base64url");
    const key = `${sessionProviderId}:${fingerprint}`;
    let upstream = this.upstreams.get(key);
    if (!upstream) {
      upstream = new Upstream(target, capabilities);
      upstream.onIdentity = (identity) => this.identities.set(sessionProviderId, identity);
      this.upstreams.set(key, upstream);
      this.sweeper ??= setInterval(() => void this.closeIdle(), Math.min(this.idleMs, 60_000)).unref();
    }
    return upstream;
  }

  get size(): number {
    return this.upstreams.size;
  }

  /**
   * The identity (`serverInfo`) a session provider's server gave when this process last connected to it, kept while
   * the connection is down or being opened again; undefined until one opened.
   */
  identityOf(sessionProviderId: string): Implementation | undefined {
    return this.identities.get(sessionProviderId);
  }

  async closeIdle(now = Date.now()): Promise<void> {
    const stale = [...this.upstreams].filter(([, u]) => u.idle && now - u.lastUsedAt >= this.idleMs);
    for (const [key] of stale) this.upstreams.delete(key);
    const connected = new Set([...this.upstreams.keys()].map(sessionProviderOf));
    for (const [key] of stale)
      if (!connected.has(sessionProviderOf(key))) this.identities.delete(sessionProviderOf(key));
    await Promise.all(stale.map(([, u]) => u.close()));
  }

  async closeAll(): Promise<void> {
    const all = [...this.upstreams.values()];
    this.upstreams.clear();
    this.identities.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await Promise.all(all.map((u) => u.close()));
  }
}

/** The session provider of a pool key (`<session provider id>:<fingerprint>`). */
const sessionProviderOf = (key: string) => key.slice(0, key.indexOf(":"));

/** The one pool of this process: the gateway and the tool-calls API share its connections. */
export const upstreams = new UpstreamPool();

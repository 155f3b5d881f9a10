import { toNodeHandler } from "@modelcontextprotocol/node";
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  createMcpHandler,
  InMemoryServerEventBus,
  type McpServerFactory,
  type Notification,
  ProtocolErrorCode,
  type ServerEvent,
  SUBSCRIPTION_ID_META_KEY,
} from "@modelcontextprotocol/server";
import type { Request, Response } from "express";
import { sendJson } from "../http/errors.ts";
import type { Upstream, UpstreamCaller } from "../runtimes/pool.ts";
import { FirstAnswer, type Gateway } from "./gateway.ts";
import type { GatewaySession, GatewaySessionProvider } from "./gateway-session.ts";
import { exposeTaskIds } from "./server.ts";
import { coreTasksViaExtension, declaresTasksExtension, TASKS_EXTENSION } from "./task-eras.ts";

type Params = Record<string, unknown>;

/** The change events an upstream notification becomes on a session's listen streams. */
const EVENTS: Record<string, ServerEvent["kind"]> = {
  "notifications/tools/list_changed": "tools_list_changed",
  "notifications/prompts/list_changed": "prompts_list_changed",
  "notifications/resources/list_changed": "resources_list_changed",
};

/** One session's `subscriptions/listen` streams on this process, and the upstreams they hear from. */
interface Hub {
  serve: (req: Request, res: Response, stream: Stream) => Promise<void>;
  /** Settles once the hub hears the upstreams of the session it opened with (see SessionSubscriptions.hear). */
  hearing: Promise<void>;
  streams: Set<Stream>;
  close: () => void;
}

/** The upstreams a hub hears, by session provider, and the session as last announced. */
interface HubUpstreams {
  current: GatewaySession;
  closed: boolean;
  heard: Map<string, Heard>;
}

/** An upstream a hub hears, until `stop`. */
interface Heard {
  upstream: Upstream;
  stop: () => void;
}

/**
 * What the gateway itself sends on one listen stream, beside what the SDK sends (list changes): updates of the
 * resources it follows (session-wide URIs, those refused left out) and the notifications of the tasks it follows
 * (session-wide ids, Tasks extension), written once the stream has been acknowledged.
 */
interface Stream {
  resources: Set<string>;
  taskIds: string[];
  feed: StreamFeed;
}

/** A task the stream follows: where it lives, its id as the upstream names it (`uri`) and as the session does. */
type FollowedTask = NonNullable<Awaited<ReturnType<Gateway["locateTask"]>>> & { taskId: string; stop?: () => void };

/**
 * `subscriptions/listen` (MCP 2026-07-28) on a session's endpoint. A client opens a stream and says which changes
 * it wants: list changes of tools, prompts and resources, and updates of resources by URI. The SDK serves the
 * stream (acknowledgement, list change filtering, subscription ids, keep-alives); this class feeds it. While a
 * session has a stream open on this process, the process listens to every upstream of the session in the upstream's
 * era (a 2025 server's GET stream, a 2026-07-28 server's own listen stream), those of providers added meanwhile too
 * (see hear), and publishes the list changes they announce on the session's own bus. The resources a stream names are subscribed upstream while it is open, except
 * those of a provider that does not offer subscriptions, which the acknowledgement leaves out (the revision's way of
 * refusing part of a filter); their updates, resource URIs made session-wide, are written to the stream by the
 * gateway, which relays a sub-resource's too (see Namespaces.updatedUri; the SDK's filter matches exact URIs only).
 * So are the tasks it names (`taskIds`, the Tasks extension's, for a client that declares it: tasks.md "Task Status
 * Notifications"), whose `notifications/tasks` the stream carries with session-wide task ids. The SDK's stream
 * knows neither, so they are added to it (withOwnNotifications). The records follow task notifications where the
 * upstream connection hears them, once each however many streams follow the task (Gateway.upstreamFor). Any
 * replica serves a stream: each listens to the upstreams itself.
 */
export class SessionSubscriptions {
  private readonly hubs = new Map<string, Hub>();

  constructor(
    private readonly gateway: Gateway,
    private readonly factory: McpServerFactory,
    private readonly onerror: (error: Error) => void,
    /** Announces when the session itself changed what it lists (see SessionListWatchers), until stopped. */
    private readonly watchLists: (session: GatewaySession, announce: (now: GatewaySession) => void) => () => void,
  ) {}

  /** Serves one listen request (`req.auth` already carries the session, as for any per-request MCP request). */
  async serve(req: Request, res: Response, session: GatewaySession): Promise<void> {
    const filter = filterOf(req.body);
    const capabilities = (req.body?.params?._meta as Params | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
      | ClientCapabilities
      | undefined;
    const taskIds = strings(filter?.taskIds);
    // tasks.md "Task Status Notifications": a client that asks for them without declaring the extension MUST get -32021.
    if (taskIds.length > 0 && !declaresTasksExtension(capabilities)) {
      sendJson(res, 400, {
        jsonrpc: "2.0",
        id: req.body?.id ?? null,
        error: {
          code: ProtocolErrorCode.MissingRequiredClientCapability,
          message: "Missing required client capability: task status notifications need the Tasks extension",
          data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        },
      });
      return;
    }
    let hub = this.hubs.get(session.id);
    if (!hub) {
      hub = this.open(session);
      this.hubs.set(session.id, hub);
    }
    const opened = hub;
    const requested = strings(filter?.resourceSubscriptions);
    const stream: Stream = { resources: new Set(requested), taskIds: [], feed: new StreamFeed() };
    // Counted off however early the client goes, even while its resources and tasks are still being subscribed.
    opened.streams.add(stream);
    const resources = this.subscribeAll(
      requested.map((uri) => this.subscribable(session, uri, stream)),
      ({ upstream, uri }) => upstream.subscribe(uri, this.gateway.timeoutMs),
      ({ upstream, uri }) => upstream.unsubscribe(uri, this.gateway.timeoutMs),
    );
    const tasks = this.subscribeAll(
      taskIds.map((taskId) => this.locateTask(session, taskId, capabilities)),
      async (task) => {
        task.stop = task.upstream.listen(taskPeer(task, this.gateway, session, stream.feed));
        await task.upstream.subscribeTask(task.uri, this.gateway.timeoutMs).catch((error: unknown) => {
          task.stop?.();
          throw error;
        });
      },
      (task) => {
        task.stop?.();
        return task.upstream.unsubscribeTask(task.uri, this.gateway.timeoutMs);
      },
    );
    res.on("close", () => {
      for (const subscribed of [resources, tasks]) void subscribed.then(({ release }) => release());
      opened.streams.delete(stream);
      if (opened.streams.size > 0) return;
      opened.close();
      if (this.hubs.get(session.id) === opened) this.hubs.delete(session.id);
    });
    const [, followed] = await Promise.all([resources, tasks, opened.hearing]);
    stream.taskIds = followed.located.map((task) => task.taskId);
    await opened.serve(req, res, stream);
  }

  /**
   * The resource a listen request names by its session-wide `uri`, to subscribe upstream; null when no provider of
   * the session owns it (the stream keeps it: nothing will be announced of it), or when its provider does not
   * offer subscriptions (the stream drops it, and its acknowledgement leaves it out).
   */
  private async subscribable(session: GatewaySession, uri: string, stream: Stream) {
    const target = await this.gateway.locateUri(session, uri);
    const refusal = target && (await this.gateway.subscriptionRefusal(target, uri));
    if (!refusal) return target;
    stream.resources.delete(uri);
    this.onerror(refusal);
    return null;
  }

  /**
   * The task a listen request names by its session-wide id, when its upstream can announce it: one of 2026-07-28
   * that offers the Tasks extension, reached as this client reaches it (with the capabilities it declared, as its
   * task requests are). A 2025 upstream's task is not followed: it announces its statuses in 2025's terms. The
   * stream's acknowledgement names every task so found: the gateway relays whatever its upstream announces of it
   * (the SDK client keeps no account of which task ids the upstream's own acknowledgement named).
   */
  private async locateTask(
    session: GatewaySession,
    taskId: string,
    capabilities: ClientCapabilities | undefined,
  ): Promise<FollowedTask | null> {
    const target = await this.gateway.locateTask(session, taskId, capabilities ? { capabilities } : {});
    if (!target) return null;
    // An upstream of 2026-07-28 that offers the extension (as for a 2025 client's core tasks).
    return coreTasksViaExtension(await target.upstream.describe(this.gateway.timeoutMs)) ? { ...target, taskId } : null;
  }

  private open(session: GatewaySession): Hub {
    const bus = new InMemoryServerEventBus(this.onerror);
    const handler = createMcpHandler(this.factory, { bus, legacy: "reject", onerror: this.onerror });
    const node = toNodeHandler(handler);
    const streams = new Set<Stream>();
    /**
     * A stream is served by the SDK with the gateway's part (resources, tasks) taken out of its filter and added to
     * the stream. The SDK ends at once a stream whose filter it honours nothing of: a stream of only resources or
     * tasks asks it for tool list changes as well (the session always offers them), which are then left out of the
     * stream and of its acknowledgement. A stream left with nothing to follow is the SDK's to end.
     */
    const serve = (req: Request, res: Response, stream: Stream) => {
      const filter = filterOf(req.body) ?? {};
      // (A malformed member stays, for the SDK to refuse the request.)
      const { resourceSubscriptions, ...others } = filter;
      const listChanges = Array.isArray(resourceSubscriptions) ? others : filter;
      const ours = stream.resources.size > 0 || stream.taskIds.length > 0;
      const carrier = ours && !LIST_CHANGE_FILTER.some((member) => listChanges[member] === true);
      const params = (req.body as { params: Params }).params;
      const notifications = carrier ? { ...listChanges, toolsListChanged: true } : listChanges;
      const body = { ...req.body, params: { ...params, notifications } };
      if (!ours) return node(req, res, body);
      const fetch: typeof handler.fetch = async (request, options) =>
        withOwnNotifications(await handler.fetch(request, options), stream, carrier);
      return toNodeHandler({ fetch })(req, res, body);
    };
    const upstreams: HubUpstreams = { current: session, closed: false, heard: new Map() };
    // The session's own changes, as its upstreams' list changes are: announced once the hub hears the upstreams of
    // the providers it now has, so a client that hears of a new provider hears that provider's changes from then on.
    const unwatch = this.watchLists(session, (now) => {
      void this.hear(upstreams, now, bus, streams).then(() => {
        for (const kind of Object.values(EVENTS)) bus.publish({ kind } as ServerEvent);
      });
    });
    return {
      serve,
      hearing: this.hear(upstreams, session, bus, streams),
      streams,
      close: () => {
        upstreams.closed = true;
        unwatch();
        for (const { stop } of upstreams.heard.values()) stop();
        upstreams.heard.clear();
        void handler.close();
      },
    };
  }

  /**
   * Has the hub hear the upstreams of `session`'s providers (a 2025 server's GET stream, a modern one's listen
   * stream), and no longer those of providers it no longer has or that are now reached otherwise (a new version,
   * config or credentials make another upstream connection). Settles once each is heard, or as a listing waits on
   * it (see bounded): a hung upstream holds back no stream. A later change follows for itself.
   */
  private async hear(
    hub: HubUpstreams,
    session: GatewaySession,
    bus: InMemoryServerEventBus,
    streams: Set<Stream>,
  ): Promise<void> {
    hub.current = session;
    const kept = new Set(session.providers.map((provider) => provider.sessionProviderId));
    for (const [id, { stop }] of hub.heard) {
      if (kept.has(id)) continue;
      stop();
      hub.heard.delete(id);
    }
    const race = new FirstAnswer();
    await Promise.all(
      session.providers.map((provider) => {
        const hearing = this.gateway.upstreamFor(session.instanceId, provider).then(async (upstream) => {
          if (hub.closed || hub.current !== session) return;
          const id = provider.sessionProviderId;
          const heard = hub.heard.get(id);
          if (heard?.upstream !== upstream) {
            heard?.stop();
            hub.heard.set(id, { upstream, stop: upstream.listen(this.publisher(hub, provider, bus, streams)) });
          }
          await upstream.listening(this.gateway.timeoutMs);
        });
        return this.bounded(race, hearing, "its changes are heard once it has.");
      }),
    );
  }

  /**
   * What an upstream announces outside any request: list changes as the session's change events, a resource's
   * update (its URI made session-wide) to each stream that follows it.
   */
  private publisher(
    hub: HubUpstreams,
    provider: GatewaySessionProvider,
    bus: InMemoryServerEventBus,
    streams: Set<Stream>,
  ) {
    return {
      notify: (notification: Notification) => {
        const params = notification.params as Record<string, unknown> | undefined;
        const kind = EVENTS[notification.method];
        if (kind) {
          bus.publish({ kind } as ServerEvent);
        } else if (notification.method === "notifications/resources/updated" && typeof params?.uri === "string") {
          // Under the URI each stream subscribed with (streams hear only theirs), for the resource or one above it,
          // named as the session now names it (a second provider prefixes every URI).
          const names = this.gateway.namespaces(hub.current);
          for (const stream of streams) {
            const uri = names.updatedUri(provider.sessionProviderId, params.uri, stream.resources);
            if (uri !== undefined) stream.feed.push({ ...notification, params: { ...params, uri } });
          }
        }
      },
      request: noClient,
    };
  }

  /**
   * Waits on `work` for one upstream as a listing does: one that has not answered the list timeout after another
   * did is left to finish meanwhile (`late` says what then), its failure reported.
   */
  private bounded(race: FirstAnswer, work: Promise<void>, late: string): Promise<void> {
    return race.bound(work, this.gateway.listMs, undefined, late).catch((error: unknown) => {
      this.onerror(error instanceof Error ? error : new Error(String(error)));
    });
  }

  /**
   * Subscribes the upstreams to what a listen request names (resources, tasks), each `located` where it lives; the
   * returned `release` ends it, and `located` is what was found. The stream waits on each upstream as a listing
   * does: one that has not subscribed the list timeout after another did is left to finish meanwhile (what it
   * announces flows once it has), so a hung upstream holds back no stream.
   */
  private async subscribeAll<T extends { upstream: Upstream }>(
    targets: Promise<T | null>[],
    subscribe: (target: T) => Promise<void>,
    unsubscribe: (target: T) => Promise<void>,
  ): Promise<{ located: T[]; release: () => void }> {
    const located: T[] = [];
    const held: T[] = [];
    let ended = false;
    const end = (target: T) => void unsubscribe(target).catch(() => {});
    const race = new FirstAnswer();
    await Promise.all(
      targets.map((locating) => {
        const subscribing = locating.then(async (target) => {
          if (!target) return;
          located.push(target);
          await subscribe(target);
          // A stream that ended while this upstream was still subscribing does not keep the subscription.
          if (ended) end(target);
          else held.push(target);
        });
        return this.bounded(race, subscribing, "the stream is served without it until it has.");
      }),
    );
    return {
      located,
      release: () => {
        ended = true;
        for (const target of held.splice(0)) end(target);
      },
    };
  }
}

/** The members of the core filter (MCP 2026-07-28 SubscriptionFilter) the SDK serves: list changes. */
const LIST_CHANGE_FILTER = ["toolsListChanged", "promptsListChanged", "resourcesListChanged"];

/** A listen request's filter (`params.notifications`; the SDK validates its core members). */
function filterOf(body: unknown): Params | undefined {
  const filter = (body as { params?: { notifications?: unknown } } | undefined)?.params?.notifications;
  return filter && typeof filter === "object" ? (filter as Params) : undefined;
}

/** The strings of a filter's list member (resource URIs, task ids), at most 1,000. */
function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string").slice(0, 1_000) : [];
}

/** Server→client requests outside a request have no client to go to on a listen stream (MCP 2026-07-28). */
const noClient = async (request: { method: string }): Promise<never> => {
  throw new Error(`${request.method} has no client to answer it outside a request (MCP 2026-07-28).`);
};

/** Hears an upstream's `notifications/tasks` of one followed task, for one stream, with the session's task id. */
function taskPeer(task: FollowedTask, gateway: Gateway, session: GatewaySession, feed: StreamFeed): UpstreamCaller {
  const providerId = task.provider.sessionProviderId;
  return {
    notify: (notification) => {
      if (notification.method !== "notifications/tasks" || notification.params?.taskId !== task.uri) return;
      feed.push({
        ...notification,
        params: exposeTaskIds(notification.params, gateway.namespaces(session), providerId),
      });
    },
    request: noClient,
  };
}

/**
 * What the gateway writes to one stream (resource updates, task notifications): held until the stream has written
 * its acknowledgement (what the upstreams announced meanwhile included), then written as they come.
 */
class StreamFeed {
  private sink: ((notification: Notification) => void) | null = null;
  private readonly early: Notification[] = [];

  push(notification: Notification): void {
    if (this.sink) this.sink(notification);
    else this.early.push(notification);
  }

  drain(sink: (notification: Notification) => void): void {
    this.sink = sink;
    for (const notification of this.early.splice(0)) sink(notification);
  }
}

/**
 * The SDK's listen stream (server-sent events) with the gateway's part: its acknowledgement names the resources and
 * the tasks the gateway agreed to send notifications for (`notifications.resourceSubscriptions`, and tasks.md's
 * `notifications.taskIds`), and after it each notification of the stream's feed is written, stamped with the
 * stream's subscription id as the SDK stamps its own. `carrier`: the tool list changes were asked for the SDK's
 * sake only (see SessionSubscriptions.open).
 */
function withOwnNotifications(response: globalThis.Response, own: Stream, carrier: boolean) {
  if (!response.body || !response.headers.get("content-type")?.startsWith("text/event-stream")) return response;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const event = (message: Params) => encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  let pending = "";
  const frames = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, sse) {
      pending += decoder.decode(chunk, { stream: true });
      for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
        const frame = pending.slice(0, end + 2);
        pending = pending.slice(end + 2);
        const message = messageOf(frame);
        if (carrier && message?.method === "notifications/tools/list_changed") continue;
        if (message?.method !== "notifications/subscriptions/acknowledged") {
          sse.enqueue(encoder.encode(frame));
          continue;
        }
        const params = message.params as { notifications: Params; _meta?: Params };
        const { toolsListChanged: _carried, ...rest } = params.notifications;
        const notifications = {
          ...(carrier ? rest : params.notifications),
          ...(own.resources.size > 0 ? { resourceSubscriptions: [...own.resources] } : {}),
          ...(own.taskIds.length > 0 ? { taskIds: own.taskIds } : {}),
        };
        sse.enqueue(event({ ...message, params: { ...params, notifications } }));
        const stamp = { [SUBSCRIPTION_ID_META_KEY]: params._meta?.[SUBSCRIPTION_ID_META_KEY] };
        own.feed.drain((notification) => {
          const meta = { ...(notification.params?._meta as Params | undefined), ...stamp };
          try {
            sse.enqueue(event({ jsonrpc: "2.0", ...notification, params: { ...notification.params, _meta: meta } }));
          } catch {
            // The stream has ended; its subscriptions are being released.
          }
        });
      }
    },
  });
  return new globalThis.Response(response.body.pipeThrough(frames), {
    status: response.status,
    headers: response.headers,
  });
}

/** The JSON-RPC message of one server-sent event, if it carries one. */
function messageOf(frame: string): (Params & { method?: string; params?: Params }) | undefined {
  const data = frame.split("\n").find((line) => line.startsWith("data: "));
  try {
    return data ? JSON.parse(data.slice("data: ".length)) : undefined;
  } catch {
    return undefined;
  }
}

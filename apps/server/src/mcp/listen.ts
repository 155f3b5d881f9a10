import { toNodeHandler } from "@modelcontextprotocol/node";
import {
  createMcpHandler,
  InMemoryServerEventBus,
  type McpServerFactory,
  type Notification,
  type ServerEvent,
} from "@modelcontextprotocol/server";
import type { Request, Response } from "express";
import type { Upstream } from "../runtimes/pool.ts";
import { FirstAnswer, type Gateway } from "./gateway.ts";
import type { GatewaySession, GatewaySessionProvider } from "./gateway-session.ts";

/** The change events an upstream notification becomes on a session's listen streams. */
const EVENTS: Record<string, ServerEvent["kind"]> = {
  "notifications/tools/list_changed": "tools_list_changed",
  "notifications/prompts/list_changed": "prompts_list_changed",
  "notifications/resources/list_changed": "resources_list_changed",
};

/** One session's `subscriptions/listen` streams on this process, and the upstreams they hear from. */
interface Hub {
  serve: (req: Request, res: Response, body: unknown) => Promise<void>;
  streams: number;
  close: () => void;
}

/**
 * `subscriptions/listen` (MCP 2026-07-28) on a session's endpoint. A client opens a stream and says which changes
 * it wants: list changes of tools, prompts and resources, and updates of resources by URI. The SDK serves the
 * stream (acknowledgement, filtering, subscription ids, keep-alives); this class feeds it. While a session has a
 * stream open on this process, the process listens to every upstream of the session in the upstream's era (a 2025
 * server's GET stream, a 2026-07-28 server's own listen stream) and publishes what they announce on the session's
 * own bus, resource URIs made session-wide. The resources a stream names are subscribed upstream while it is open.
 * Any replica serves a stream: each listens to the upstreams itself.
 */
export class SessionSubscriptions {
  private readonly hubs = new Map<string, Hub>();

  constructor(
    private readonly gateway: Gateway,
    private readonly factory: McpServerFactory,
    private readonly onerror: (error: Error) => void,
  ) {}

  /** Serves one listen request (`req.auth` already carries the session, as for any per-request MCP request). */
  async serve(req: Request, res: Response, session: GatewaySession): Promise<void> {
    let hub = this.hubs.get(session.id);
    if (!hub) {
      hub = this.open(session);
      this.hubs.set(session.id, hub);
    }
    const opened = hub;
    opened.streams++;
    // Counted off however early the client goes, even while its resources are still being subscribed.
    const subscribed = this.subscribeResources(session, resourcesOf(req.body));
    res.on("close", () => {
      void subscribed.then((release) => release());
      if (--opened.streams > 0) return;
      opened.close();
      if (this.hubs.get(session.id) === opened) this.hubs.delete(session.id);
    });
    await subscribed;
    await opened.serve(req, res, req.body);
  }

  private open(session: GatewaySession): Hub {
    const bus = new InMemoryServerEventBus(this.onerror);
    const handler = createMcpHandler(this.factory, { bus, legacy: "reject", onerror: this.onerror });
    const node = toNodeHandler(handler);
    const stops: (() => void)[] = [];
    let closed = false;
    for (const provider of session.providers) {
      void this.gateway
        .upstreamFor(session.instanceId, provider)
        .then(async (upstream) => {
          if (closed) return;
          stops.push(upstream.listen(this.publisher(session, provider, bus)));
          // Connected, so the upstream's own stream is open: a 2025 server's GET stream, a modern one's listen.
          await upstream.describe(this.gateway.timeoutMs);
        })
        .catch((error: unknown) => this.onerror(error instanceof Error ? error : new Error(String(error))));
    }
    return {
      serve: (req, res, body) => node(req, res, body),
      streams: 0,
      close: () => {
        closed = true;
        for (const stop of stops) stop();
        void handler.close();
      },
    };
  }

  /** What an upstream announces outside any request, as the session's change events. */
  private publisher(session: GatewaySession, provider: GatewaySessionProvider, bus: InMemoryServerEventBus) {
    return {
      notify: (notification: Notification) => {
        const params = notification.params as Record<string, unknown> | undefined;
        const kind = EVENTS[notification.method];
        if (kind) {
          bus.publish({ kind } as ServerEvent);
        } else if (notification.method === "notifications/resources/updated" && typeof params?.uri === "string") {
          const uri = this.gateway.namespaces(session).uri(provider.sessionProviderId, params.uri);
          bus.publish({ kind: "resource_updated", uri, params: { ...params, uri } });
        }
      },
      request: async (request: { method: string }) => {
        throw new Error(`${request.method} has no client to answer it outside a request (MCP 2026-07-28).`);
      },
    };
  }

  /**
   * Subscribes the upstreams to the resources a listen request names; the returned function ends it. The stream
   * waits on each upstream as a listing does: one that has not subscribed the list timeout after another did is
   * left to finish meanwhile (its updates flow once it has), so a hung upstream holds back no stream.
   */
  private async subscribeResources(session: GatewaySession, uris: string[]): Promise<() => void> {
    const held: { upstream: Upstream; uri: string }[] = [];
    let ended = false;
    const unsubscribe = ({ upstream, uri }: { upstream: Upstream; uri: string }) =>
      void upstream.unsubscribe(uri, this.gateway.timeoutMs).catch(() => {});
    const race = new FirstAnswer();
    const late = "the stream is served without it until it has.";
    await Promise.all(
      uris.map(async (uri) => {
        const subscribing = this.gateway.locateUri(session, uri).then(async (target) => {
          if (!target) return;
          await target.upstream.subscribe(target.uri, this.gateway.timeoutMs);
          // A stream that ended while this upstream was still subscribing does not keep the subscription.
          if (ended) unsubscribe(target);
          else held.push(target);
        });
        await race.bound(subscribing, this.gateway.listMs, undefined, late).catch((error: unknown) => {
          this.onerror(error instanceof Error ? error : new Error(String(error)));
        });
      }),
    );
    return () => {
      ended = true;
      for (const target of held.splice(0)) unsubscribe(target);
    };
  }
}

/** The resource URIs a `subscriptions/listen` request asks updates of (the SDK validates the rest). */
function resourcesOf(body: unknown): string[] {
  const filter = (body as { params?: { notifications?: { resourceSubscriptions?: unknown } } })?.params?.notifications;
  const uris = filter?.resourceSubscriptions;
  return Array.isArray(uris) ? uris.filter((uri): uri is string => typeof uri === "string").slice(0, 1_000) : [];
}

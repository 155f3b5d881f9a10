import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { ApiError } from "@toolplane/server-stubs";
import type { Express, RequestHandler } from "express";
import type pg from "pg";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/**
 * The process's Prometheus metrics, served at `/metrics`. One registry per process, like the upstream pool and the
 * calls in flight it describes: several apps in one process (tests) add to the same series.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Buckets from 5 ms to 30 s: API requests take milliseconds, tool calls up to the upstream timeout. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const httpDuration = new Histogram({
  name: "http_request_duration_seconds",
  help: "HTTP requests by method, route template and status, from arrival until the response closed.",
  labelNames: ["method", "route", "status_code"] as const,
  buckets: BUCKETS,
  registers: [registry],
});

const toolCalls = new Counter({
  name: "toolplane_gateway_tool_calls_total",
  help: "Tool calls through the gateway (MCP and the tool-calls API) by provider and outcome.",
  labelNames: ["provider", "status"] as const,
  registers: [registry],
});
const toolCallDuration = new Histogram({
  name: "toolplane_gateway_tool_call_duration_seconds",
  help: "Tool call latency through the gateway by provider (upstream connection and its answer).",
  labelNames: ["provider"] as const,
  buckets: BUCKETS,
  registers: [registry],
});
const upstreamErrors = new Counter({
  name: "toolplane_gateway_upstream_errors_total",
  help: "Tool calls an upstream did not answer with a result, by provider and tool call error code.",
  labelNames: ["provider", "code"] as const,
  registers: [registry],
});
const upstreamConnections = new Gauge({
  name: "toolplane_gateway_upstream_connections",
  help: "Open upstream MCP connections (HTTP sessions and stdio children) of this process by provider.",
  labelNames: ["provider"] as const,
  registers: [registry],
});

/** The database pools of this process, read at every scrape (an ended pool drops out). */
const pools = new Set<pg.Pool>();
const poolGauge = (name: string, help: string, read: (pool: pg.Pool) => number) =>
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      let sum = 0;
      for (const pool of pools) {
        if (pool.ended) pools.delete(pool);
        else sum += read(pool);
      }
      this.set(sum);
    },
  });
poolGauge("toolplane_db_pool_connections", "Database connections open in the pool.", (p) => p.totalCount);
poolGauge("toolplane_db_pool_idle_connections", "Database connections open and idle.", (p) => p.idleCount);
poolGauge("toolplane_db_pool_waiting_requests", "Queries waiting for a pooled connection.", (p) => p.waitingCount);

/** Reports a database pool's connections (PostgreSQL's pool, or PGlite's single connection). */
export function observeDatabasePool(pool: pg.Pool): void {
  pools.add(pool);
}

/** Methods outside this set are counted as `other`, so a client cannot mint label values. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

const MATCHED_ROUTE = Symbol("matched route");
const ROUTE_TEMPLATE = Symbol("route template");
type RoutedRequest = IncomingMessage & { baseUrl?: string; [MATCHED_ROUTE]?: unknown; [ROUTE_TEMPLATE]?: string };

/**
 * Keeps the route template of each request of `app` as its router matches it: Express resets `req.baseUrl` once a
 * request leaves a nested router, so it is read when Express sets `req.route`. The accessor is defined once, on the
 * prototype Express gives its requests: defined on each request, it cost ~50 µs of every request (an accessor
 * added to an IncomingMessage slows Node's HTTP code for it).
 */
export function recordRouteTemplates(app: Express): void {
  Object.defineProperty(app.request, "route", {
    configurable: true,
    get(this: RoutedRequest) {
      return this[MATCHED_ROUTE];
    },
    set(this: RoutedRequest, value: { path?: unknown } | undefined) {
      this[MATCHED_ROUTE] = value;
      // A resource's collection route is `/` under its mount path: `/sessions/` is reported as `/sessions`.
      if (typeof value?.path === "string") {
        this[ROUTE_TEMPLATE] = `${this.baseUrl ?? ""}${value.path}`.replace(/(.)\/$/, "$1");
      }
    },
  });
}

/** Names the route of a request served without Express's router. */
export function routeTemplate(req: IncomingMessage, template: string): void {
  (req as RoutedRequest)[ROUTE_TEMPLATE] = template;
}

/**
 * Times every request under its route template (`/sessions/:id`, `/mcp/:sessionId`; `unmatched` for 404s of
 * unknown paths), never the concrete path: ids would make one series per object (see recordRouteTemplates).
 */
export const httpMetrics: RequestHandler = (req, res, next) => {
  const end = httpDuration.startTimer();
  res.once("close", () => {
    const route = (req as RoutedRequest)[ROUTE_TEMPLATE] ?? "unmatched";
    end({ method: METHODS.has(req.method) ? req.method : "other", route, status_code: res.statusCode });
  });
  next();
};

const sha256 = (value: string) => createHash("sha256").update(value).digest();

/**
 * `GET /metrics` in the Prometheus text format. With a token (TOOLPLANE_METRICS_TOKEN) a scrape must send
 * `Authorization: Bearer <token>`; without one the endpoint is open, like /health (the numbers name providers, no
 * secrets).
 */
export function metricsEndpoint(token: string | undefined): RequestHandler {
  const expected = token ? sha256(token) : null;
  return async (req, res) => {
    if (expected) {
      const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
      if (!given || !timingSafeEqual(sha256(given), expected)) {
        res.setHeader("WWW-Authenticate", 'Bearer realm="metrics"');
        throw new ApiError("unauthorized", "Send Authorization: Bearer <TOOLPLANE_METRICS_TOKEN> to read metrics.");
      }
    }
    res.setHeader("Content-Type", registry.contentType);
    res.setHeader("Cache-Control", "no-store");
    res.end(await registry.metrics());
  };
}

/** The provider label of each upstream connection, and the ones counted open. */
const upstreamLabels = new WeakMap<object, string>();
const openUpstreams = new WeakMap<object, string>();

/** Names the provider an upstream connection belongs to (the gateway knows it; the pool does not). */
export function labelUpstream(upstream: object, provider: string): void {
  upstreamLabels.set(upstream, provider);
}

/** The provider an upstream connection belongs to, as labelUpstream named it. */
export const upstreamLabelOf = (upstream: object): string => upstreamLabels.get(upstream) ?? "unknown";

/** An upstream connection opened or closed; idempotent, so every reset may report a close. */
export function upstreamConnection(upstream: object, open: boolean): void {
  const counted = openUpstreams.get(upstream);
  if (open && counted === undefined) {
    const provider = upstreamLabelOf(upstream);
    openUpstreams.set(upstream, provider);
    upstreamConnections.inc({ provider });
  } else if (!open && counted !== undefined) {
    openUpstreams.delete(upstream);
    upstreamConnections.dec({ provider: counted });
  }
}

/** A finished gateway tool call: its outcome, its latency and, when it failed upstream, why. */
export function countToolCall(provider: string, status: string, seconds: number, errorCode: string | null): void {
  toolCalls.inc({ provider, status });
  toolCallDuration.observe({ provider }, seconds);
  if (errorCode) upstreamErrors.inc({ provider, code: errorCode });
}

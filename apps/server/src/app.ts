import type { IncomingMessage, ServerResponse } from "node:http";
import { createApiRouter, type Handlers, type OpenApiDocument } from "@toolplane/server-stubs";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { Logger } from "pino";
import { ApiKeyVerifier } from "./auth/api-keys.ts";
import type { RequestContext } from "./context.ts";
import type { ChangeFeed } from "./db/changes.ts";
import type { Db } from "./db/database.ts";
import { docsRouter } from "./http/docs.ts";
import { errorHandler, notFoundRoute, RETRY_AFTER_SECONDS } from "./http/errors.ts";
import { idempotency } from "./http/idempotency.ts";
import { requestLogger } from "./http/logging.ts";
import { mcpGatewayRouter, sessionPostOf } from "./mcp/router.ts";
import { oauthPageRouter } from "./oauth/pages.ts";
import { logGatewayTo } from "./observability/gateway.ts";
import { httpMetrics, metricsEndpoint, recordRouteTemplates, routeTemplate } from "./observability/metrics.ts";
import { portalRouter } from "./portal/pages.ts";
import { createHandlers } from "./resources/index.ts";
import type { SecretBox } from "./secrets/secret-box.ts";

export interface AppDeps {
  db: Db;
  spec: OpenApiDocument;
  logger: Logger;
  publicUrl: string;
  bodyLimitBytes: number;
  /** Encrypts and decrypts secrets at rest. */
  secrets: SecretBox;
  /** Answers /ready: whether the database can be reached. */
  isReady?: () => Promise<boolean>;
  /** The database's change notices: with them the MCP gateway keeps session views in memory between requests. */
  changes?: ChangeFeed;
}

/** Builds the whole HTTP application; never listens (main.ts does), so tests can mount it on any port. */
export function createApp(deps: AppDeps, handlers: Handlers<RequestContext> = createHandlers(deps)): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", false);
  recordRouteTemplates(app);
  const logRequest = requestLogger(deps.logger);
  app.use(logRequest);
  app.use(httpMetrics);
  logGatewayTo(deps.logger);
  // First of the routes (its paths, /mcp/… and the protected-resource metadata, are nobody else's): the gateway's
  // requests are the hot path, and each route before it is one more match per MCP request.
  const gateway = mcpGatewayRouter(deps);
  app.use(gateway.router);
  // MCP's POSTs, the gateway's hot path, are served before Express dispatches them: Express sets the prototype of
  // every request and response it handles, which de-optimises Node's HTTP code for them, and walks its router
  // (~130 µs of CPU per request on the bench machine, BENCHMARKS.md). The same middleware, handler and errors.
  // (`app.handle` is what the app, as a request listener, calls for every request; Express's types leave it out.)
  const dispatching = app as Express & { handle: Dispatch };
  const dispatch = dispatching.handle.bind(app);
  dispatching.handle = (req, res, next) => {
    const sessionId = sessionPostOf(req);
    if (!sessionId) return dispatch(req, res, next);
    // What the middleware above reads of a request Express dispatched, and the route its router names.
    const request = Object.assign(req, { originalUrl: req.url }) as Request;
    logRequest(request, res as Response, ignore);
    httpMetrics(request, res as Response, ignore);
    routeTemplate(req, "/mcp/:sessionId");
    gateway.servePost(req, res, sessionId);
  };

  app.get("/health", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/ready", async (_req, res) => {
    const ready = await (deps.isReady?.() ?? Promise.resolve(true)).catch(() => false);
    if (!ready) res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
    res.status(ready ? 200 : 503).json({ status: ready ? "ready" : "unavailable" });
  });
  app.get("/metrics", metricsEndpoint(process.env.TOOLPLANE_METRICS_TOKEN || undefined));
  app.use(docsRouter(deps.spec));
  app.use(portalRouter(deps));
  app.use(oauthPageRouter(deps));

  const keys = new ApiKeyVerifier(deps.db);
  app.use(
    createApiRouter<RequestContext>({
      spec: deps.spec,
      handlers,
      bodyLimitBytes: deps.bodyLimitBytes,
      context: async (req) => {
        const { instanceId } = await keys.verify(req.headers.authorization);
        return { instanceId, requestId: String(req.id) };
      },
      beforePost: idempotency(deps.db, deps.secrets),
    }),
  );

  app.use(notFoundRoute);
  app.use(errorHandler);
  return app;
}

const ignore = () => undefined;
type Dispatch = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => void;

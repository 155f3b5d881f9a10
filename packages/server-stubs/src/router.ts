import express, { type NextFunction, type Request, type Response } from "express";
import { ApiError } from "./errors.ts";
import { type Handlers, operationTable } from "./generated/operations.gen.ts";
import type { OperationDescriptor, OperationInput } from "./handler.ts";
import { createInputGuard } from "./input-guard.ts";
import type { OpenApiDocument } from "./openapi.ts";
import { compileValidators } from "./validation.ts";

export interface ApiRouterOptions<Ctx> {
  /** The bundled spec (spec/generated/openapi.json). */
  spec: OpenApiDocument;
  handlers: Handlers<Ctx>;
  /** Authenticates the request and builds the handler context; throws an ApiError to refuse it. */
  context: (req: Request) => Promise<Ctx>;
  /** Largest accepted JSON body; larger ones are a 413. */
  bodyLimitBytes: number;
  /**
   * Runs before every POST operation's body is validated and its handler called, once the request is authenticated,
   * its path and query valid and its body read: `body` is the JSON as sent (validation fills defaults in). The
   * server's Idempotency-Key handling. "answered" means it sent the response itself and nothing else must run.
   */
  beforePost?: (ctx: Ctx, req: Request, res: Response, body: unknown) => Promise<"answered" | "continue">;
}

type AnyHandler<Ctx> = (input: OperationInput<never>, ctx: Ctx) => Promise<unknown>;

/**
 * Binds every operation of the spec to its handler: authenticate, parse and validate path, query and body,
 * call the handler, send its result with the operation's 2xx status. Every failure is passed to `next` as an
 * ApiError for the app's single error handler.
 */
export function createApiRouter<Ctx>(options: ApiRouterOptions<Ctx>): express.Router {
  const router = express.Router({ strict: false });
  router.use(refuseOversizedBodies(options.bodyLimitBytes));
  // One sub-router per first path segment (resource), so a request is matched against its resource's few routes
  // instead of every operation's in turn (a GET of a deployment went through ~50 route patterns).
  const resources = new Map<string, express.Router>();
  const bind = (path: string) => {
    const prefix = `/${path.split("/")[1] ?? ""}`;
    let resource = resources.get(prefix);
    if (!resource) {
      resource = express.Router({ strict: false });
      resources.set(prefix, resource);
      router.use(prefix, resource);
    }
    return { resource, route: toExpressPath(path.slice(prefix.length)) || "/" };
  };
  const validators = compileValidators(options.spec, operationTable);
  const guard = createInputGuard(options.spec);
  const parseJson = express.json({ limit: options.bodyLimitBytes, type: () => true, strict: false });

  const readBody = (req: Request, res: Response) =>
    new Promise<void>((resolve, reject) =>
      parseJson(req, res, (err?: unknown) => (err ? reject(bodyParserError(err, options.bodyLimitBytes)) : resolve())),
    );

  const methodsByPath = new Map<string, string[]>();
  const methodsOf = (path: string) => methodsByPath.get(path) ?? [];
  for (const op of bindingOrder(operationTable)) {
    const validator = validators.get(op.operationId);
    const handler = (options.handlers as unknown as Record<string, Record<string, AnyHandler<Ctx>>>)[op.group]?.[
      op.operationId
    ];
    if (!validator || !handler) throw new Error(`no handler or validator for ${op.operationId}`);
    methodsByPath.set(op.path, [...methodsOf(op.path), op.method.toUpperCase()]);
    const { resource, route } = bind(op.path);
    resource[op.method](route, async (req: Request, res: Response, next: NextFunction) => {
      try {
        const ctx = await options.context(req);
        guard.check(req.params, "path");
        const raw = rawQuery(req.originalUrl);
        guard.check(Object.fromEntries(new URLSearchParams(raw)), "query");
        const path = validator.path(req.params as Record<string, string>);
        const query = validator.query(raw);
        let received: unknown;
        if (validator.hasBody) {
          if (hasRequestBody(req)) {
            if (!req.is(["application/json", "application/*+json"])) {
              throw new ApiError(
                "unsupported_media_type",
                "Request bodies must be sent with Content-Type: application/json.",
              );
            }
            await readBody(req, res);
            guard.check(req.body, "body");
            received = req.body;
          } else if (validator.bodyRequired) {
            throw new ApiError("invalid_data", "Request body is required: send a JSON object.", {
              entity: "body",
              errors: [{ code: "required", message: "a JSON request body is required", path: [] }],
            });
          }
        }
        if (op.method === "post" && (await options.beforePost?.(ctx, req, res, received)) === "answered") return;
        const body = received === undefined ? undefined : validator.body(received);
        const result = await handler({ path, query, body } as OperationInput<never>, ctx);
        res.status(op.successStatus).json(result);
      } catch (err) {
        next(err);
      }
    });
  }

  for (const [path, methods] of methodsByPath) {
    const { resource, route } = bind(path);
    resource.all(route, (req: Request, _res: Response, next: NextFunction) => {
      const url = `${req.baseUrl}${req.path === "/" ? "" : req.path}`;
      next(
        new ApiError("method_not_allowed", `${req.method} is not allowed on ${url}; use ${methods.join(", ")}.`, {
          entity: "endpoint",
          headers: { Allow: methods.join(", ") },
        }),
      );
    });
  }
  return router;
}

/** Literal segments before parameters, so `/imports/schema` is matched before `/imports/{id}`. */
function bindingOrder(ops: readonly OperationDescriptor[]): OperationDescriptor[] {
  const key = (path: string) => path.split("/").map((s) => (s.startsWith("{") ? `~${s}` : s));
  return [...ops].sort((a, b) => {
    const ka = key(a.path);
    const kb = key(b.path);
    for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
      const x = ka[i] ?? "";
      const y = kb[i] ?? "";
      if (x !== y) return x < y ? -1 : 1;
    }
    return ka.length - kb.length;
  });
}

const toExpressPath = (path: string) => path.replace(/\{([^}]+)\}/g, ":$1");

function rawQuery(url: string): string {
  const i = url.indexOf("?");
  return i === -1 ? "" : url.slice(i + 1);
}

function hasRequestBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * A declared length above the limit is refused before anything else (authentication included): the body parser
 * would otherwise read (and discard) the whole announced body first, so a lying `Content-Length: 99999999999` with
 * a 2-byte body was never answered. The body is not read; the HTTP server discards what still comes, within its
 * bounds, so that a client still writing reads the answer instead of a reset.
 */
function refuseOversizedBodies(limit: number): express.RequestHandler {
  return (req, _res, next) => {
    const length = Number(req.headers["content-length"] ?? 0);
    if (!(length > limit)) return next();
    next(tooLarge(limit));
  };
}

const tooLarge = (limit: number) =>
  new ApiError("payload_too_large", `Request body exceeds the limit of ${limit} bytes.`, { entity: "body" });

function bodyParserError(err: unknown, limit: number): ApiError {
  const type = (err as { type?: string }).type;
  if (type === "entity.too.large") {
    return tooLarge(limit);
  }
  if (type === "entity.parse.failed") {
    return new ApiError("bad_request", "Request body is not valid JSON.", { entity: "body", cause: err });
  }
  if (type === "encoding.unsupported" || type === "charset.unsupported") {
    return new ApiError("unsupported_media_type", "Request body must be UTF-8 encoded JSON.", { entity: "body" });
  }
  return new ApiError("bad_request", "Request body could not be read.", { entity: "body", cause: err });
}

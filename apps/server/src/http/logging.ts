import { maskUrlCredentials } from "@toolplane/server-stubs";
import type { RequestHandler } from "express";
import { type Logger, pino } from "pino";
import { newId } from "../lib/ids.ts";

/** Never log credentials: headers that carry them, and bodies (which may hold secrets), are not logged at all. */
const REDACT = ["req.headers.authorization", "req.headers.cookie", 'res.headers["set-cookie"]'];

declare module "http" {
  interface IncomingMessage {
    /** The request id, also sent back as X-Request-Id. */
    id: string;
    /** A logger bound to this request (its id, method and URL). */
    log: Logger;
  }
}

/**
 * Lines go to stdout asynchronously: lines logged while a write is under way leave in the next write, so a busy
 * server makes one write per batch instead of one blocking write per request (each is a system call). Whatever is
 * buffered is flushed when the process exits.
 */
export function createLogger(level: string): Logger {
  return pino(
    { level, redact: { paths: REDACT, censor: "[redacted]" }, serializers: { err: serializeError } },
    pino.destination({ sync: false }),
  );
}

/**
 * One structured line per request (id, method, URL with OAuth codes and tokens masked, status, time), written when
 * the response closes. Built by hand rather than with pino-http: that one serializes every request's headers into
 * a child logger up front, which cost 10–20 % of a simple request's CPU. The per-request logger `req.log` is a
 * plain child (~1.5 µs): a getter that made it on first use, defined on each request, cost ~50 µs of every request
 * (an accessor added to an IncomingMessage slows Node's HTTP code for it, as Express's prototype swap does).
 */
export function requestLogger(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const startedAt = performance.now();
    const given = req.headers["x-request-id"];
    const id = typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : newId("req");
    res.setHeader("X-Request-Id", id);
    req.id = id;
    const request = { id, method: req.method, url: maskUrl(req.originalUrl) };
    req.log = logger.child({ req: request });
    res.once("close", () => {
      const status = res.statusCode;
      const level = status >= 500 ? "error" : "info";
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        { req: request, res: { statusCode: status }, responseTime: Math.round(performance.now() - startedAt) },
        res.writableFinished ? "request completed" : "request aborted",
      );
    });
    next();
  };
}

/** Request URLs in logs: credentials masked, and the OAuth callback's one-time `code` and `state` too. */
const maskUrl = (url: string) => maskUrlCredentials(url, ["code", "state"]);

/** Logged errors keep their message and stack, with any URL credentials they quote masked. */
function serializeError(err: unknown): unknown {
  const serialized = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  for (const field of ["message", "stack"]) {
    const value = serialized[field];
    if (typeof value === "string") serialized[field] = maskUrlCredentials(value);
  }
  return serialized;
}

import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError, type ErrorCode } from "@toolplane/server-stubs";
import type { ErrorRequestHandler, RequestHandler } from "express";
import { isDatabaseUnavailable } from "../lib/db-errors.ts";

/** What a client is told to wait during a database outage: about one reconnect attempt's time. */
export const RETRY_AFTER_SECONDS = 5;

/** Unknown routes: a 404 in the documented shape, before authentication (there is nothing to protect). */
export const notFoundRoute: RequestHandler = (req, _res, next) => {
  next(new ApiError("not_found", `No endpoint ${req.method} ${req.path}.`, { entity: "endpoint" }));
};

/**
 * The single error handler: every failure leaves as the documented error body. Unexpected errors are logged
 * with the request id and answered with a 500 that carries the id and nothing of the internals.
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) =>
  // Through `res.json`, which the idempotency middleware wraps to keep a POST's answer.
  sendError(err, req, res, (status, body) => res.status(status).json(body));

/**
 * Answers a failed request as errorHandler does: also for requests served before Express dispatches them (the MCP
 * gateway's POSTs, see app.ts), written with Node's own response methods.
 */
export function sendError(
  err: unknown,
  req: IncomingMessage,
  res: ServerResponse,
  write = (status: number, body: unknown) => sendJson(res, status, body),
): void {
  const apiError = toApiError(err, String(req.id));
  // An outage answers every request with a 503 for a while: one warning line each, not a stack trace each.
  if (apiError.code === "service_unavailable") req.log.warn({ code: apiError.code }, apiError.message);
  else if (apiError.status >= 500) req.log.error({ err }, "request failed");
  else req.log.info({ code: apiError.code }, apiError.message);
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [name, value] of Object.entries(apiError.headers ?? {})) res.setHeader(name, value);
  write(apiError.status, apiError.toBody());
}

/** A JSON answer as Express's `res.status(status).json(body)` writes it (no ETag: the app turns them off). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  if (!res.hasHeader("Content-Type")) res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.end(JSON.stringify(body));
}

function toApiError(err: unknown, requestId: string): ApiError {
  if (err instanceof ApiError) return err;
  // Express's router rejects an undecodable path (`/x/%zz`) with a URIError carrying status 400.
  if (err instanceof URIError && (err as { status?: unknown }).status === 400) {
    return new ApiError("bad_request", "The request path is not valid percent-encoded UTF-8.", { cause: err });
  }
  // Body parsers outside the API router (the OAuth pages' form parser) fail with http-errors: a 4xx status, a
  // `type` and `expose` (the message is safe to show). An oversized form was a 500.
  const parserError = err as { type?: unknown; status?: unknown; expose?: unknown; message?: unknown };
  if (typeof parserError.type === "string" && parserError.expose === true && typeof parserError.status === "number") {
    const byStatus: Record<number, ErrorCode> = { 413: "payload_too_large", 415: "unsupported_media_type" };
    return new ApiError(
      byStatus[parserError.status] ?? "bad_request",
      `The request body could not be read: ${String(parserError.message)}.`,
      { entity: "body", cause: err },
    );
  }
  // PostgreSQL cannot store U+0000 in text or jsonb (22021, 22P05); the statement fails before anything is written.
  const sqlState = (err as { code?: unknown } | null)?.code;
  if (sqlState === "22021" || sqlState === "22P05") {
    return new ApiError("invalid_data", "A text value contains the NUL character (U+0000), which cannot be stored.", {
      hint: "Remove the NUL character; secret data (config and vault values) may contain it.",
      cause: err,
    });
  }
  // The database is down or restarting: nothing was written, and the pool reconnects by itself once it is back.
  if (isDatabaseUnavailable(err)) {
    return new ApiError("service_unavailable", "The database is unavailable; retry in a few seconds.", {
      headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
      cause: err,
    });
  }
  return new ApiError("internal_server_error", `An unexpected error occurred. Reference: ${requestId}.`);
}

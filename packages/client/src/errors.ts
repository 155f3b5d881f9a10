import type { components } from "@toolplane/types";

export type ErrorBody = components["schemas"]["Error"];
export type ErrorCode = components["schemas"]["ErrorCode"];

/** Thrown by `unwrap` and the pagination helper for every non-2xx answer; carries the documented error body. */
export class ToolplaneApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode | "unknown";
  readonly body: ErrorBody | undefined;
  readonly requestId: string | null;

  constructor(response: Response, body: unknown) {
    const error = isErrorBody(body) ? body : undefined;
    super(error ? `${response.status} ${error.code}: ${error.message}` : `HTTP ${response.status}`);
    this.name = "ToolplaneApiError";
    this.status = response.status;
    this.code = error?.code ?? "unknown";
    this.body = error;
    this.requestId = response.headers.get("x-request-id");
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  return typeof body === "object" && body !== null && (body as { __typename?: unknown }).__typename === "error";
}

/**
 * The request got no HTTP answer: connection refused or reset, DNS or TLS failure, the server gone mid-answer.
 * Thrown (after any retries) in place of fetch's bare `TypeError: fetch failed`; `cause` is that error, whose own
 * `cause` usually names the system error (`ECONNREFUSED`, …).
 */
export class ToolplaneNetworkError extends Error {
  readonly method: string;
  readonly url: string;
  /** How many times the request was sent (1 when it was not retried). */
  readonly attempts: number;

  constructor(request: Request, attempts: number, cause: unknown, message = describeCause(cause)) {
    super(`${request.method} ${request.url} failed${attempts > 1 ? ` after ${attempts} attempts` : ""}: ${message}`, {
      cause,
    });
    this.name = "ToolplaneNetworkError";
    this.method = request.method;
    this.url = request.url;
    this.attempts = attempts;
  }
}

/**
 * No complete answer within the client's `timeoutMs` (each attempt has its own), or before the caller's own
 * `signal: AbortSignal.timeout(ms)` fired. A kind of network error: `catch (e) { if (e instanceof
 * ToolplaneNetworkError) … }` handles both.
 */
export class ToolplaneTimeoutError extends ToolplaneNetworkError {
  /** The bound that ran out; undefined when it was the caller's own signal. */
  readonly timeoutMs: number | undefined;

  constructor(request: Request, attempts: number, timeoutMs: number | undefined, cause: unknown) {
    super(request, attempts, cause, timeoutMs === undefined ? "timed out" : `no answer within ${timeoutMs} ms`);
    this.name = "ToolplaneTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  // undici's `fetch failed` says nothing; the system error it wraps says what happened.
  const inner = cause.cause instanceof Error ? cause.cause.message : undefined;
  return inner ?? cause.message;
}

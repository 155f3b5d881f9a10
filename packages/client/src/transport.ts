// The fetch every client call goes through, under openapi-fetch: one bound per attempt, retries with full-jitter
// backoff for requests that are safe to repeat, an Idempotency-Key on every POST, and typed errors instead of
// fetch's bare TypeError.
import { ToolplaneNetworkError, ToolplaneTimeoutError } from "./errors.ts";

export interface TransportOptions {
  fetch: typeof globalThis.fetch;
  retries: number;
  timeoutMs: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  idempotencyKeys: boolean;
}

/** Answers that mean "not done, try again": rate limited, or a gateway that did not get through. */
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
/** RFC 9110 §9.2.2: sending them twice has the effect of sending them once. */
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
/** Statuses whose Response must have a null body (the Response constructor throws otherwise). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
/** A Retry-After longer than this is not waited for: the last answer is returned instead of hanging the caller. */
const MAX_RETRY_AFTER_MS = 30_000;

export function createTransport(options: TransportOptions): typeof globalThis.fetch {
  return async (input, init) => {
    let request = new Request(input, init);
    if (options.idempotencyKeys && request.method === "POST" && !request.headers.has("idempotency-key")) {
      // Chosen once, before the first attempt: every retry of this call carries the same key, so a server that
      // honours it acts once however many attempts reach it.
      const headers = new Headers(request.headers);
      headers.set("Idempotency-Key", crypto.randomUUID());
      request = new Request(request, { headers });
    }
    // A POST (or PATCH) is repeated only under a key the server can deduplicate on; 429 means the server did not
    // act at all, so any request is repeated after it.
    const safeToRepeat = IDEMPOTENT_METHODS.has(request.method) || request.headers.has("idempotency-key");
    for (let attempt = 1; ; attempt++) {
      const last = attempt > options.retries;
      let response: Response;
      try {
        response = await sendOnce(options, request, attempt);
      } catch (error) {
        if (last || !safeToRepeat || !(error instanceof ToolplaneNetworkError) || callerGaveUp(request)) throw error;
        await sleep(backoffMs(attempt, options), request, attempt);
        continue;
      }
      // A 409 with Retry-After to a keyed request is `idempotency_conflict`: an earlier attempt of this very call is
      // still running on the server (this one was sent after a network error or timeout), and repeating it later
      // gets that attempt's answer. Other 409s (the resource's state) carry no Retry-After and are final.
      const stillRunning =
        response.status === 409 && request.headers.has("idempotency-key") && response.headers.has("retry-after");
      const retryable = RETRY_STATUSES.has(response.status) && (safeToRepeat || response.status === 429);
      if (last || !(retryable || stillRunning)) return response;
      const wait = retryAfterMs(response.headers.get("retry-after")) ?? backoffMs(attempt, options);
      if (wait > MAX_RETRY_AFTER_MS) return response;
      await sleep(wait, request, attempt);
    }
  };
}

/**
 * Full jitter (a random wait between 0 and the exponential bound): clients that failed together do not retry
 * together, which plain exponential backoff would make them do.
 */
export function backoffMs(
  attempt: number,
  options: Pick<TransportOptions, "retryBaseDelayMs" | "retryMaxDelayMs">,
  random: () => number = Math.random,
): number {
  return random() * Math.min(options.retryMaxDelayMs, options.retryBaseDelayMs * 2 ** (attempt - 1));
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3), in ms; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * One attempt, bounded by `timeoutMs` from sending until the whole body has arrived: a clone of the body is read
 * here, so a server that sends headers and then stalls is a timeout too, not a hang (or an untyped abort) in
 * openapi-fetch's JSON parsing. The response itself is returned, not a copy: a custom fetch may tell its own
 * responses apart by identity (the contract runner's recorder does), and the tee has buffered its body meanwhile.
 */
async function sendOnce(options: TransportOptions, request: Request, attempt: number): Promise<Response> {
  const timer =
    options.timeoutMs > 0 && Number.isFinite(options.timeoutMs) ? AbortSignal.timeout(options.timeoutMs) : undefined;
  const signal = timer ? AbortSignal.any([request.signal, timer]) : request.signal;
  try {
    const response = await options.fetch(new Request(request.clone(), { signal }));
    if (timer && response.body && !NULL_BODY_STATUSES.has(response.status) && request.method !== "HEAD") {
      await response.clone().arrayBuffer();
    }
    return response;
  } catch (error) {
    if (callerGaveUp(request)) throw callerAbort(request, attempt, error);
    if (timer?.aborted) throw new ToolplaneTimeoutError(request, attempt, options.timeoutMs, error);
    throw new ToolplaneNetworkError(request, attempt, error);
  }
}

function callerGaveUp(request: Request): boolean {
  return request.signal.aborted;
}

/** The caller's own deadline (`AbortSignal.timeout`) is a timeout like ours; any other abort stays the caller's. */
function callerAbort(request: Request, attempt: number, error: unknown): unknown {
  const reason: unknown = request.signal.reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return new ToolplaneTimeoutError(request, attempt, undefined, reason);
  }
  return reason ?? error;
}

/** Waits between attempts, cut short (with the caller's abort) when the caller's signal fires meanwhile. */
function sleep(ms: number, request: Request, attempt: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (callerGaveUp(request)) {
      reject(callerAbort(request, attempt, request.signal.reason));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(callerAbort(request, attempt, request.signal.reason));
    };
    const timer = setTimeout(() => {
      request.signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    request.signal.addEventListener("abort", onAbort, { once: true });
  });
}

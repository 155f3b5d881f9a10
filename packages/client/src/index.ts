import type { paths } from "@toolplane/types";
import type { Client, Middleware } from "openapi-fetch";
import * as openapiFetch from "openapi-fetch";
import { ToolplaneApiError } from "./errors.ts";
import { createTransport } from "./transport.ts";

export type { components, operations, paths } from "@toolplane/types";
export {
  type ErrorBody,
  type ErrorCode,
  ToolplaneApiError,
  ToolplaneNetworkError,
  ToolplaneTimeoutError,
} from "./errors.ts";

export interface ToolplaneClientOptions {
  /** For example `http://127.0.0.1:8080`. */
  baseUrl: string;
  apiKey: string;
  /** Custom fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
  /**
   * How many times a failed request is sent again (default 2): after a network error or timeout, or an answer
   * 429, 502, 503 or 504, for requests that are safe to repeat (GET, HEAD, OPTIONS, PUT, DELETE, and any request
   * with an `Idempotency-Key`, which every POST has by default); after 429 for any request; after a 409 with
   * `Retry-After` to a request with an `Idempotency-Key` (an earlier attempt of the call is still running).
   */
  retries?: number;
  /**
   * Bound on each attempt, from sending until the whole answer is read, in ms; a miss is a
   * `ToolplaneTimeoutError` (retried like a network error). Default 60 000: above the server's own 30 s bound on
   * upstream calls, so its 504 arrives first. 0 turns it off. For one call, pass `signal: AbortSignal.timeout(ms)`:
   * that ends in a `ToolplaneTimeoutError` too, and is never retried (it is the caller's deadline for the whole call).
   */
  timeoutMs?: number;
  /**
   * Backoff between attempts (full jitter): attempt n waits a random time in [0, min(max, base · 2ⁿ⁻¹)) ms,
   * unless the answer's Retry-After says how long. Defaults 100 and 5 000.
   */
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  /**
   * Send `Idempotency-Key: <random UUID>` with every POST that has none (default true); the key stays the same
   * across that call's retries. Give your own key in `headers` to repeat a POST safely across calls.
   */
  idempotencyKeys?: boolean;
  headers?: Record<string, string>;
}

export type ToolplaneClient = Client<paths> & {
  /** Every item of a list operation, page after page (following `pagination.next_cursor`). */
  paginate: <P extends ListPath>(path: P, ...init: PaginateArgs<P>) => AsyncGenerator<ListItem<P>>;
};

type GetOperation<P extends keyof paths> = paths[P] extends { get: infer G } ? G : never;
type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Ok<P extends keyof paths> = GetOperation<P> extends { responses: { 200: infer R } } ? JsonOf<R> : never;

/** Paths whose GET returns a `{items, pagination}` page. */
export type ListPath = {
  [P in keyof paths]: Ok<P> extends { items: unknown[]; pagination: unknown } ? P : never;
}[keyof paths];
export type ListItem<P extends ListPath> = Ok<P> extends { items: (infer I)[] } ? I : never;
type ListParameters<P extends ListPath> = GetOperation<P> extends { parameters: infer Params } ? Params : never;
/** The path parameters of a list path with ids in it (`/sessions/{session_id}/tool-calls`); never for the others. */
type ListPathParams<P extends ListPath> = ListParameters<P> extends { path: infer T } ? T : never;
type ListQuery<P extends ListPath> = ListParameters<P> extends { query?: infer Q } ? NonNullable<Q> : never;
/** `paginate()`'s options: `params.path` is required exactly when the path has parameters. */
export type PaginateInit<P extends ListPath> = [ListPathParams<P>] extends [never]
  ? { params?: { query?: ListQuery<P> } }
  : { params: { path: ListPathParams<P>; query?: ListQuery<P> } };
/** Optional for paths without parameters, required for the others: a missing id fails to compile. */
export type PaginateArgs<P extends ListPath> = [ListPathParams<P>] extends [never]
  ? [init?: PaginateInit<P>]
  : [init: PaginateInit<P>];

// The CommonJS build (tsdown 0.21 / rolldown, tsdown issue #1054) imports a CommonJS dependency's default export
// with Node's ESM semantics because this package is "type": "module": there, `default` is openapi-fetch's whole
// module.exports, whose own `default` is the function. The ESM build and the sources get the function directly.
type CreateFetchClient = typeof openapiFetch.default;
const createFetchClient: CreateFetchClient =
  typeof openapiFetch.default === "function"
    ? openapiFetch.default
    : (openapiFetch.default as unknown as { default: CreateFetchClient }).default;

/**
 * The typed client: openapi-fetch over the generated `paths`, with the API key sent on every request.
 * Calls resolve to `{data, error, response}`; wrap them in `unwrap()` to get the data or a thrown
 * `ToolplaneApiError`.
 */
export function createToolplaneClient(options: ToolplaneClientOptions): ToolplaneClient {
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    fetch: createTransport({
      // Looked up per request, so fetch interceptors installed after the client was made (msw, tracing) apply.
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      retries: options.retries ?? 2,
      timeoutMs: options.timeoutMs ?? 60_000,
      retryBaseDelayMs: options.retryBaseDelayMs ?? 100,
      retryMaxDelayMs: options.retryMaxDelayMs ?? 5_000,
      idempotencyKeys: options.idempotencyKeys ?? true,
    }),
    headers: options.headers,
  });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${options.apiKey}`);
      return request;
    },
  };
  client.use(auth);

  async function* paginate<P extends ListPath>(path: P, ...init: PaginateArgs<P>): AsyncGenerator<ListItem<P>> {
    const base = (init[0] as { params?: { query?: Record<string, unknown> } } | undefined)?.params ?? {};
    let cursor: string | undefined;
    do {
      const query = { ...base.query, ...(cursor ? { cursor } : {}) };
      // The generic path defeats openapi-fetch's per-path overloads; the types above keep callers exact.
      const get = client.GET as unknown as (
        p: string,
        i: unknown,
      ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
      const page = (await unwrap(get(path, { params: { ...base, query } }))) as {
        items: ListItem<P>[];
        pagination: { next_cursor?: string | null; has_more_after: boolean };
      };
      yield* page.items;
      cursor = page.pagination.has_more_after ? (page.pagination.next_cursor ?? undefined) : undefined;
    } while (cursor);
  }

  return Object.assign(client, { paginate });
}

/** The data of a 2xx answer, or a thrown `ToolplaneApiError` carrying the error body. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ToolplaneApiError(response, error);
  return data as T;
}

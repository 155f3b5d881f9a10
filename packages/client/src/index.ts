import type { paths } from "@toolplane/types";
import createFetchClient, { type Client, type Middleware } from "openapi-fetch";
import { ToolplaneApiError } from "./errors.ts";

export type { components, operations, paths } from "@toolplane/types";
export { type ErrorBody, type ErrorCode, ToolplaneApiError } from "./errors.ts";

export interface ToolplaneClientOptions {
  /** For example `http://127.0.0.1:8080`. */
  baseUrl: string;
  apiKey: string;
  /** Custom fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
  /** Retries of GET/HEAD/OPTIONS (and any request answered 429) after 429, 502, 503, 504 or a network error. */
  retries?: number;
  headers?: Record<string, string>;
}

export type ToolplaneClient = Client<paths> & {
  /** Every item of a list operation, page after page (following `pagination.next_cursor`). */
  paginate: <P extends ListPath>(path: P, init?: ListInit<P>) => AsyncGenerator<ListItem<P>>;
};

type GetOperation<P extends keyof paths> = paths[P] extends { get: infer G } ? G : never;
type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Ok<P extends keyof paths> = GetOperation<P> extends { responses: { 200: infer R } } ? JsonOf<R> : never;

/** Paths whose GET returns a `{items, pagination}` page. */
export type ListPath = {
  [P in keyof paths]: Ok<P> extends { items: unknown[]; pagination: unknown } ? P : never;
}[keyof paths];
export type ListItem<P extends ListPath> = Ok<P> extends { items: (infer I)[] } ? I : never;
type ListInit<P extends ListPath> =
  GetOperation<P> extends { parameters: infer Params } ? { params?: Partial<Params> } : never;

/**
 * The typed client: openapi-fetch over the generated `paths`, with the API key sent on every request.
 * Calls resolve to `{data, error, response}`; wrap them in `unwrap()` to get the data or a thrown
 * `ToolplaneApiError`.
 */
export function createToolplaneClient(options: ToolplaneClientOptions): ToolplaneClient {
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    // Looked up per request, so fetch interceptors installed after the client was made (msw, tracing) apply.
    fetch: withRetries(options.fetch ?? ((input, init) => globalThis.fetch(input, init)), options.retries ?? 2),
    headers: options.headers,
  });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${options.apiKey}`);
      return request;
    },
  };
  client.use(auth);

  async function* paginate<P extends ListPath>(path: P, init?: ListInit<P>): AsyncGenerator<ListItem<P>> {
    const base = (init as { params?: { query?: Record<string, unknown> } } | undefined)?.params ?? {};
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

const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);

function withRetries(fetchImpl: typeof globalThis.fetch, retries: number): typeof globalThis.fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const idempotent = IDEMPOTENT.has(request.method);
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await fetchImpl(request.clone());
        const retryable = RETRY_STATUSES.has(response.status) && (idempotent || response.status === 429);
        if (!retryable || attempt >= retries) return response;
        await delay(retryAfterMs(response.headers.get("retry-after"), attempt));
      } catch (err) {
        if (!idempotent || attempt >= retries) throw err;
        await delay(retryAfterMs(null, attempt));
      }
    }
  };
}

function retryAfterMs(header: string | null, attempt: number): number {
  const seconds = header === null ? Number.NaN : Number(header);
  return Number.isFinite(seconds) ? Math.min(seconds * 1000, 30_000) : 100 * 2 ** attempt;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The client's transport against a real HTTP server on 127.0.0.1 (no msw: what fetch really does when a connection
// is refused, an answer stalls, or a server fails and recovers).
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createToolplaneClient,
  ToolplaneApiError,
  ToolplaneNetworkError,
  ToolplaneTimeoutError,
  unwrap,
} from "../src/index.ts";
import { backoffMs, retryAfterMs } from "../src/transport.ts";

type Handler = (req: IncomingMessage, res: ServerResponse, call: number) => void;
const seen: { method: string; url: string; idempotencyKey: string | undefined }[] = [];
let handler: Handler = (_req, res) => res.end();
let server: Server;
let baseUrl: string;

const group = { object: "provider.group", id: "pgr_01jqz7m3c8v4r2k9x5n6t0w1ya", name: "G" };
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};
const unavailable = (res: ServerResponse) =>
  json(res, 503, { __typename: "error", ok: false, status: 503, code: "service_unavailable", message: "busy" });
// Fast retries: the backoff itself is tested on its own below.
const fast = { retryBaseDelayMs: 1, retryMaxDelayMs: 5 };

beforeAll(async () => {
  server = createServer((req, res) => {
    const key = req.headers["idempotency-key"];
    seen.push({
      method: req.method ?? "",
      url: req.url ?? "",
      idempotencyKey: typeof key === "string" ? key : undefined,
    });
    req.resume();
    req.on("end", () => handler(req, res, seen.length));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  seen.length = 0;
});

describe("idempotency keys", () => {
  it("sends a random UUID Idempotency-Key on POST, the same on every retry of the call", async () => {
    handler = (_req, res, call) => (call < 3 ? unavailable(res) : json(res, 201, group));
    const client = createToolplaneClient({ baseUrl, apiKey: "k", retries: 2, ...fast });
    const created = await unwrap(client.POST("/provider-groups", { body: { name: "G" } }));
    expect(created.id).toBe(group.id);
    expect(seen).toHaveLength(3);
    const keys = new Set(seen.map((s) => s.idempotencyKey));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    await unwrap(client.POST("/provider-groups", { body: { name: "G" } }));
    expect(seen[3]?.idempotencyKey).not.toBe(seen[0]?.idempotencyKey);
  });

  it("keeps a key the caller gives, and sends none on GET", async () => {
    handler = (_req, res) => json(res, 201, group);
    const client = createToolplaneClient({ baseUrl, apiKey: "k" });
    await client.POST("/provider-groups", { body: { name: "G" }, headers: { "Idempotency-Key": "order-42" } });
    await client.GET("/provider-groups/{provider_group_id}", { params: { path: { provider_group_id: group.id } } });
    expect(seen.map((s) => s.idempotencyKey)).toEqual(["order-42", undefined]);
  });

  it("does not repeat a POST without a key (idempotencyKeys: false) answered 503", async () => {
    handler = (_req, res) => unavailable(res);
    const client = createToolplaneClient({ baseUrl, apiKey: "k", retries: 2, idempotencyKeys: false, ...fast });
    const result = await client.POST("/provider-groups", { body: { name: "G" } });
    expect(result.response.status).toBe(503);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.idempotencyKey).toBeUndefined();
  });
});

describe("retries", () => {
  it("repeats GET and DELETE after 502/503/504 and returns the last answer when they run out", async () => {
    handler = (_req, res) => unavailable(res);
    const client = createToolplaneClient({ baseUrl, apiKey: "k", retries: 3, ...fast });
    const error = await unwrap(
      client.DELETE("/sessions/{session_id}", { params: { path: { session_id: "ses_01jqz7m3c8v4r2k9x5n6t0w1ye" } } }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolplaneApiError);
    expect((error as ToolplaneApiError).status).toBe(503);
    expect(seen).toHaveLength(4);
  });

  it("repeats a keyed POST answered 409 with Retry-After (an earlier attempt still runs), not a plain 409", async () => {
    const conflict = (code: string) => ({ __typename: "error", ok: false, status: 409, code, message: "m" });
    handler = (_req, res, call) =>
      call === 1 ? json(res, 409, conflict("idempotency_conflict"), { "retry-after": "0" }) : json(res, 201, group);
    const client = createToolplaneClient({ baseUrl, apiKey: "k", ...fast });
    expect((await unwrap(client.POST("/provider-groups", { body: { name: "G" } }))).id).toBe(group.id);
    expect(seen.map((s) => s.idempotencyKey)).toEqual([seen[0]?.idempotencyKey, seen[0]?.idempotencyKey]);

    seen.length = 0;
    handler = (_req, res) => json(res, 409, conflict("conflict"));
    expect((await client.POST("/provider-groups", { body: { name: "G" } })).response.status).toBe(409);
    expect(seen).toHaveLength(1);
  });

  it("does not repeat a PATCH without a key", async () => {
    handler = (_req, res) => unavailable(res);
    const client = createToolplaneClient({ baseUrl, apiKey: "k", retries: 3, ...fast });
    await client.PATCH("/provider-groups/{provider_group_id}", {
      params: { path: { provider_group_id: group.id } },
      body: { name: "H" },
    });
    expect(seen).toHaveLength(1);
  });

  it("waits what Retry-After says", async () => {
    handler = (_req, res, call) =>
      call === 1 ? json(res, 429, { __typename: "error" }, { "retry-after": "1" }) : json(res, 200, group);
    const client = createToolplaneClient({ baseUrl, apiKey: "k", ...fast });
    const started = performance.now();
    await unwrap(client.GET("/provider-groups/{provider_group_id}", { params: { path: { provider_group_id: "x" } } }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(seen).toHaveLength(2);
  });

  it("backs off with full jitter: a random wait below min(max, base · 2^(attempt-1))", () => {
    const options = { retryBaseDelayMs: 100, retryMaxDelayMs: 1_000 };
    expect(backoffMs(1, options, () => 0.5)).toBe(50);
    expect(backoffMs(3, options, () => 0.5)).toBe(200);
    expect(backoffMs(10, options, () => 0.999)).toBeCloseTo(999);
    expect(backoffMs(2, options, () => 0)).toBe(0);
    const waits = Array.from({ length: 200 }, () => backoffMs(4, options));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...waits)).toBeLessThan(800);
    expect(new Set(waits).size).toBeGreaterThan(150);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-23T12:00:00Z");
    expect(retryAfterMs("2", now)).toBe(2_000);
    expect(retryAfterMs("Mon, 23 Nov 2026 12:00:03 GMT", now)).toBe(3_000);
    expect(retryAfterMs(null, now)).toBeUndefined();
    expect(retryAfterMs("soon", now)).toBeUndefined();
  });
});

describe("network errors and timeouts", () => {
  it("turns a refused connection into ToolplaneNetworkError after the retries of a GET", async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, "close");
    const client = createToolplaneClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k", retries: 2, ...fast });
    const error = await client.GET("/provider-groups").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolplaneNetworkError);
    expect(error).not.toBeInstanceOf(ToolplaneTimeoutError);
    expect(error).toMatchObject({ method: "GET", attempts: 3, url: `http://127.0.0.1:${port}/provider-groups` });
    expect((error as Error).message).toContain("ECONNREFUSED");
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it("bounds each attempt: a stalled answer is a ToolplaneTimeoutError, and a retry that answers succeeds", async () => {
    handler = (_req, res, call) => {
      if (call === 1) return; // never answers
      json(res, 200, group);
    };
    const client = createToolplaneClient({ baseUrl, apiKey: "k", timeoutMs: 200, retries: 1, ...fast });
    const data = await unwrap(
      client.GET("/provider-groups/{provider_group_id}", { params: { path: { provider_group_id: "x" } } }),
    );
    expect(data.id).toBe(group.id);
    expect(seen).toHaveLength(2);

    handler = () => {};
    seen.length = 0;
    const error = await client.GET("/provider-groups").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolplaneTimeoutError);
    expect(error).toBeInstanceOf(ToolplaneNetworkError);
    expect(error).toMatchObject({ timeoutMs: 200, attempts: 2 });
    expect(seen).toHaveLength(2);
  });

  it("counts a body that stalls after the headers against the timeout", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"items": [');
    };
    const client = createToolplaneClient({ baseUrl, apiKey: "k", timeoutMs: 200, retries: 0 });
    const error = await client.GET("/provider-groups").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolplaneTimeoutError);
  });

  it("ends a call at the caller's AbortSignal.timeout with ToolplaneTimeoutError, without retrying", async () => {
    handler = () => {};
    const client = createToolplaneClient({ baseUrl, apiKey: "k", retries: 3, ...fast });
    const error = await client.GET("/provider-groups", { signal: AbortSignal.timeout(150) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolplaneTimeoutError);
    expect((error as ToolplaneTimeoutError).timeoutMs).toBeUndefined();
    expect(seen).toHaveLength(1);
  });

  it("leaves a caller's own abort as it is (cancellation is not a failure)", async () => {
    handler = () => {};
    const client = createToolplaneClient({ baseUrl, apiKey: "k", retries: 3, ...fast });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user left")), 100);
    const error = await client.GET("/provider-groups", { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(ToolplaneNetworkError);
    expect((error as Error).message).toBe("user left");
    expect(seen).toHaveLength(1);
  });
});

describe("custom fetch", () => {
  it("gets its own Response objects back (a recorder may key on them), bodies intact", async () => {
    handler = (_req, res) => json(res, 200, group);
    const returned = new Set<Response>();
    const client = createToolplaneClient({
      baseUrl,
      apiKey: "k",
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        returned.add(response);
        return response;
      },
    });
    const { data, response } = await client.GET("/provider-groups/{provider_group_id}", {
      params: { path: { provider_group_id: group.id } },
    });
    expect(returned.has(response)).toBe(true);
    expect(data?.id).toBe(group.id);
  });
});

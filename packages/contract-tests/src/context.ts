import { randomUUID } from "node:crypto";
import { createToolplaneClient, type ToolplaneClient } from "@toolplane/client";
import { claimIdempotencyKey, type Db, hashRequest } from "@toolplane/server";
import { type Checkable, CheckFailed, type CheckOptions, type Recorder } from "./recorder.ts";
import type { Tenant } from "./server.ts";
import { fillPath, type OperationId, type SpecOperation, unknownIdLike } from "./spec.ts";

/** A key of the right shape that no instance has: the server must answer 401, not 400 or 500. */
export const UNKNOWN_API_KEY = `tp_aaaaaaaaaaaa_${"A".repeat(43)}`;

export type Actor = "a" | "b" | "unknown-key" | "no-key";

export interface SendOptions extends CheckOptions {
  /** Path parameters; missing ones take the spec's example (an id of the right prefix that does not exist). */
  path?: Record<string, string>;
  query?: Record<string, unknown>;
  /** The request body; defaults to the body schema's example from the spec. */
  body?: unknown;
  /** Who sends it: tenant a (default), tenant b, a well-formed unknown key, or no Authorization header. */
  as?: Actor;
  /**
   * "prism" (default) sends it through the proxy. "direct" sends it straight to the server, for what Prism
   * cannot pass on: upstream 501s (it answers with a mock instead), requests without credentials (it answers
   * its own 401) and malformed JSON (it never answers). Direct answers are validated in-process (2020-12).
   */
  via?: "prism" | "direct";
}

export interface RawInit {
  body?: string;
  contentType?: string;
  as?: Actor;
  headers?: Record<string, string>;
  via?: "prism" | "direct";
}

/** Everything a suite gets: clients through the proxy, the recorder's checks, and generic probes. */
export interface SuiteContext {
  /** Tenant a's typed client, pointed at the Prism proxy. Most calls act as tenant a. */
  client: ToolplaneClient;
  /** Tenant b's typed client: creates the rows whose ids must be 404 for tenant a. */
  other: ToolplaneClient;
  tenants: [Tenant, Tenant];
  /** The server's database, for seeding rows no API creates yet (catalog rows, for example). */
  db: Db;
  proxyUrl: string;
  /** The server itself, behind the proxy: only for `via: "direct"` requests (see SendOptions.via). */
  serverUrl: string;
  bodyLimitBytes: number;
  operation(operationId: OperationId): SpecOperation;
  /** Records one response: expected status, no `sl-violations`, documented error body. Returns the call's result. */
  check<R extends Checkable>(
    operationId: OperationId,
    expected: number,
    call: Promise<R> | (() => Promise<R>),
    options?: CheckOptions,
  ): Promise<R>;
  /** Like check, and returns the data; throws (ending the suite) when the status is not the expected one. */
  ok<T>(
    operationId: OperationId,
    expected: number,
    call: Promise<{ data?: T; error?: unknown; response: Response }>,
    options?: CheckOptions,
  ): Promise<T>;
  /** Sends any operation through the typed client generically (examples fill what is not given) and checks it. */
  send(operationId: OperationId, expected: number, options?: SendOptions): Promise<Response>;
  /** A raw request through the proxy (for wrong content types, oversized bodies, missing keys). Not checked. */
  raw(method: string, path: string, init?: RawInit): Promise<Response>;
  /**
   * The documented error statuses every operation answers the same way, checked generically: 401 without a key
   * and with an unknown key; 400 for `limit=0`, an unknown query parameter, malformed JSON or an unknown body
   * field; 413 for a body over the limit; 415 for a non-JSON body. Only the statuses the operation documents
   * are tried. Two of them go to the server directly, because Prism cannot pass them on: a request without
   * credentials (Prism answers its own 401) and malformed JSON (Prism never answers). Every POST is checked for its
   * Idempotency-Key answers too (see idempotencyErrors).
   */
  standardErrors(operationId: OperationId, path?: Record<string, string>): Promise<void>;
  /** 404 `not_found` for the operation with these path parameters (an unknown id, another tenant's id). */
  notFound(operationId: OperationId, path: Record<string, string>, label: string, body?: unknown): Promise<void>;
  /** An id with the prefix of the named path parameter that no row has, e.g. `ptl_000…`. */
  unknownId(pathParameter: string): string;
  log(message: string): void;
}

type LooseRequest = (
  method: string,
  path: string,
  init: { params: { path: Record<string, string>; query?: Record<string, unknown> }; body?: unknown },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

export function createSuiteContext(options: {
  proxyUrl: string;
  serverUrl: string;
  tenants: [Tenant, Tenant];
  db: Db;
  bodyLimitBytes: number;
  operations: SpecOperation[];
  recorder: Recorder;
  log: (message: string) => void;
}): SuiteContext {
  const { proxyUrl, tenants, recorder } = options;
  const byId = new Map(options.operations.map((op) => [op.operationId, op]));
  const makeClient = (apiKey: string, baseUrl = proxyUrl) =>
    createToolplaneClient({ baseUrl, apiKey, retries: 0, fetch: recorder.fetch });
  const clients: Record<Exclude<Actor, "no-key">, ToolplaneClient> = {
    a: makeClient(tenants[0].apiKey),
    b: makeClient(tenants[1].apiKey),
    "unknown-key": makeClient(UNKNOWN_API_KEY),
  };
  const directClient = makeClient(tenants[0].apiKey, options.serverUrl);
  const keys: Record<Actor, string | undefined> = {
    a: tenants[0].apiKey,
    b: tenants[1].apiKey,
    "unknown-key": UNKNOWN_API_KEY,
    "no-key": undefined,
  };

  const operation = (operationId: OperationId) => {
    const op = byId.get(operationId);
    if (!op) throw new Error(`Unknown operationId ${operationId}`);
    return op;
  };

  const raw = (method: string, path: string, init: RawInit = {}) => {
    const headers = new Headers(init.headers);
    const key = keys[init.as ?? "a"];
    if (key) headers.set("authorization", `Bearer ${key}`);
    if (init.contentType) headers.set("content-type", init.contentType);
    const base = init.via === "direct" ? options.serverUrl : proxyUrl;
    return recorder.fetch(`${base}${path}`, { method, headers, body: init.body });
  };

  const check: SuiteContext["check"] = (operationId, expected, call, checkOptions) =>
    recorder.check(operationId, expected, call, checkOptions);

  const send: SuiteContext["send"] = async (operationId, expected, sendOptions = {}) => {
    const op = operation(operationId);
    const path = { ...op.pathExamples, ...sendOptions.path };
    const body = "body" in sendOptions ? sendOptions.body : op.bodyExample;
    const actor = sendOptions.as ?? "a";
    if (actor === "no-key") {
      const query = new URLSearchParams(
        Object.entries(sendOptions.query ?? {}).map(([k, v]) => [k, String(v)] as [string, string]),
      ).toString();
      const url = fillPath(op.path, path) + (query ? `?${query}` : "");
      const init: RawInit = { as: "no-key", via: sendOptions.via ?? "prism" };
      if (op.hasBody && body !== undefined) {
        init.body = JSON.stringify(body);
        init.contentType = "application/json";
      }
      return check(operationId, expected, raw(op.method.toUpperCase(), url, init), sendOptions);
    }
    if (sendOptions.via === "direct" && actor !== "a") throw new Error("direct requests are sent as tenant a");
    const client = sendOptions.via === "direct" ? directClient : clients[actor];
    const request = client.request as unknown as LooseRequest;
    const init: Parameters<LooseRequest>[2] = { params: { path } };
    if (sendOptions.query) init.params.query = sendOptions.query;
    if (op.hasBody && body !== undefined) init.body = body;
    const result = await check(operationId, expected, request(op.method, op.path, init), sendOptions);
    return result.response;
  };

  const standardErrors: SuiteContext["standardErrors"] = async (operationId, pathParams = {}) => {
    const op = operation(operationId);
    const documented = new Set(op.documented);
    const url = fillPath(op.path, { ...op.pathExamples, ...pathParams });
    const method = op.method.toUpperCase();
    const path = { ...op.pathExamples, ...pathParams };
    if (documented.has(401)) {
      // Prism always checks security in proxy mode and, with --errors, answers a request without credentials
      // itself (a problem+json 401) instead of forwarding it, so this one goes to the server directly.
      await send(operationId, 401, {
        path,
        as: "no-key",
        via: "direct",
        code: "unauthorized",
        label: "401 without a key (direct)",
      });
      await send(operationId, 401, { path, as: "unknown-key", code: "unauthorized", label: "401 unknown key" });
    }
    if (documented.has(400)) {
      if (op.queryParameters.includes("limit")) {
        await send(operationId, 400, { path, query: { limit: 0 }, code: "invalid_data", label: "400 limit=0" });
      } else if (op.queryParameters.length > 0 || !op.hasBody) {
        await send(operationId, 400, {
          path,
          query: { unexpected_parameter: "1" },
          code: "invalid_data",
          label: "400 unknown query parameter",
        });
      }
      if (op.hasBody) {
        // Prism never answers a request whose JSON body it cannot parse (the request hangs), so malformed JSON
        // goes to the server directly.
        await check(
          operationId,
          400,
          raw(method, url, { body: '{"name":', contentType: "application/json", via: "direct" }),
          { code: "bad_request", label: "400 malformed JSON (direct)" },
        );
        const example = op.bodyExample && typeof op.bodyExample === "object" ? op.bodyExample : {};
        await send(operationId, 400, {
          path,
          body: { ...example, unexpected_field: true },
          code: "invalid_data",
          label: "400 unknown body field",
        });
      }
    }
    if (documented.has(413) && op.hasBody) {
      const padding = "x".repeat(options.bodyLimitBytes + 1024);
      await check(
        operationId,
        413,
        raw(method, url, { body: JSON.stringify({ padding }), contentType: "application/json" }),
        { code: "payload_too_large", label: "413 oversized body" },
      );
    }
    if (documented.has(415) && op.hasBody) {
      await check(operationId, 415, raw(method, url, { body: "name=x", contentType: "text/plain" }), {
        code: "unsupported_media_type",
        label: "415 text/plain body",
      });
    }
    // Every POST: one that does not document these answers fails on Prism's undocumented-status warning.
    if (method === "POST" && op.hasBody) await idempotencyErrors(op, url);
  };

  /**
   * Idempotency-Key on a POST, with bodies the server refuses (an unknown field), so nothing is created: the 400 is
   * replayed with `Idempotent-Replayed: true`; a malformed key is a 400 `bad_request`; the key with another body a
   * 422; the key while a request with it still runs (claimed here through the server's own function, as another
   * replica's request in flight holds it) a 409.
   */
  const idempotencyErrors = async (op: SpecOperation, url: string) => {
    const example = op.bodyExample && typeof op.bodyExample === "object" ? op.bodyExample : {};
    const refused = { ...example, unexpected_field: true };
    const send = (key: string, body: unknown) =>
      raw("POST", url, {
        body: JSON.stringify(body),
        contentType: "application/json",
        headers: { "idempotency-key": key },
      });
    const key = randomUUID();
    await check(op.operationId, 400, send(key, refused), {
      code: "invalid_data",
      label: "400 with an Idempotency-Key",
    });
    const replay = await check(op.operationId, 400, send(key, refused), {
      code: "invalid_data",
      label: "400 replayed for the same Idempotency-Key",
    });
    if (replay.headers.get("idempotent-replayed") !== "true") {
      recorder.fail(op.operationId, "400 replayed for the same Idempotency-Key", "no Idempotent-Replayed: true");
    }
    await check(op.operationId, 400, send("k".repeat(256), refused), {
      code: "bad_request",
      label: "400 Idempotency-Key over 255 characters",
    });
    await check(op.operationId, 422, send(key, { ...example, unexpected_field: false }), {
      code: "idempotency_key_reused",
      label: "422 Idempotency-Key reused with another body",
    });
    const running = randomUUID();
    await claimIdempotencyKey(options.db, tenants[0].instanceId, running, hashRequest("POST", url, refused));
    await check(op.operationId, 409, send(running, refused), {
      code: "idempotency_conflict",
      label: "409 Idempotency-Key of a request still running",
    });
  };

  return {
    client: clients.a,
    other: clients.b,
    tenants,
    db: options.db,
    proxyUrl,
    serverUrl: options.serverUrl,
    bodyLimitBytes: options.bodyLimitBytes,
    operation,
    check,
    ok: async (operationId, expected, call, checkOptions) => {
      const result = await check(operationId, expected, call, checkOptions);
      if (result.response.status !== expected || result.data === undefined) {
        throw new CheckFailed(`${operationId}: expected ${expected}, got ${result.response.status}`);
      }
      return result.data;
    },
    send,
    raw,
    standardErrors,
    notFound: async (operationId, path, label, body) => {
      await send(operationId, 404, {
        path,
        ...(body !== undefined ? { body } : {}),
        code: "not_found",
        label: `404 ${label}`,
      });
    },
    unknownId: (pathParameter) => {
      for (const op of options.operations) {
        const example = op.pathExamples[pathParameter];
        if (example) return unknownIdLike(example);
      }
      throw new Error(`No operation has a path parameter ${pathParameter}`);
    },
    log: options.log,
  };
}

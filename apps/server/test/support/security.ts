import { sql } from "kysely";
import { expect } from "vitest";
import type { Db } from "../../src/db/database.ts";
import type { Database } from "../../src/db/schema.ts";
import type { TestServer } from "./server.ts";

/** A raw request: a path and what to send to it. */
export type Operation = [path: string, init: RequestInit];

/** A raw JSON request (for bodies and headers the typed client cannot send); a string body is sent as it is. */
export const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** Get, update and delete of one item (`update` is the PATCH body). */
export const itemOperations = (item: string, update: unknown): Operation[] => [
  [item, { method: "GET" }],
  [item, json("PATCH", update)],
  [item, { method: "DELETE" }],
];

/** List and create on a collection, then get, update and delete of one of its items. */
export const crudOperations = (collection: string, item: string, create: unknown, update: unknown): Operation[] => [
  [collection, { method: "GET" }],
  [collection, json("POST", create)],
  ...itemOperations(item, update),
];

/** A well-formed key that no instance has. */
export const UNKNOWN_KEY = `tp_aaaaaaaaaaaa_${"A".repeat(43)}`;

/**
 * Authorization headers that must each be refused: none, another scheme, no token, garbage, an unknown key, and
 * the tenant's real key under another scheme or with a character added.
 */
export const badAuthorizations = (apiKey: string) => [
  undefined,
  "Basic abc",
  "Bearer",
  "Bearer nope",
  `Bearer ${UNKNOWN_KEY}`,
  `Basic ${apiKey}`,
  `Bearer ${apiKey}x`,
];

/**
 * Sends every operation with every bad Authorization header and expects the documented 401 each time;
 * `unchanged` (a snapshot of the rows the operations could write) must read the same after as before.
 */
export async function expectUnauthorizedEverywhere(
  t: TestServer,
  operations: Operation[],
  unchanged?: () => Promise<unknown>,
) {
  const before = await unchanged?.();
  for (const [path, init] of operations) {
    for (const authorization of badAuthorizations(t.tenant.apiKey)) {
      const headers = new Headers(init.headers);
      if (authorization) headers.set("authorization", authorization);
      const res = await t.fetch(path, { ...init, headers, auth: false });
      const label = `${init.method ?? "GET"} ${path} ${authorization?.slice(0, 12) ?? "(none)"}`;
      expect(res.status, label).toBe(401);
      expect(await res.json(), label).toMatchObject({ __typename: "error", code: "unauthorized", status: 401 });
    }
  }
  if (unchanged) expect(await unchanged()).toEqual(before);
}

/** An answer from the typed client, or a raw Response. */
export type Answer = Response | { response: Response; error?: unknown };

/** Sends raw operations one after another with the first tenant's key. */
export async function send(t: TestServer, operations: Operation[]): Promise<Response[]> {
  const out: Response[] = [];
  for (const [path, init] of operations) out.push(await t.fetch(path, init));
  return out;
}

/** Each answer must be the documented 404 naming `entity`, and its body must contain none of `hidden`. */
export async function expectNotFound(answers: Answer[], entity: string, hidden: string[] = []) {
  for (const [i, answer] of answers.entries()) {
    const raw = answer instanceof Response;
    const response = raw ? answer : answer.response;
    const body = raw ? await answer.text() : JSON.stringify(answer.error);
    const label = `#${i} ${response.url}: ${body}`;
    expect(response.status, label).toBe(404);
    expect(JSON.parse(body), label).toMatchObject({ __typename: "error", code: "not_found", status: 404, entity });
    for (const text of hidden) expect(body, label).not.toContain(text);
  }
}

/**
 * The cross-tenant sweep: every attempt (raw operations sent as the first tenant, or typed-client calls) is the
 * documented 404 for `entity` leaking none of `hidden`, and `unchanged` reads the same after as before.
 * Returns the answers, for further checks.
 */
export async function expectCrossTenantNotFound<A extends Answer = Response>(
  t: TestServer,
  sweep: {
    attempts: Operation[] | (() => Promise<A[]>);
    entity: string;
    hidden?: string[];
    unchanged: () => Promise<unknown>;
  },
) {
  const before = await sweep.unchanged();
  const answers = Array.isArray(sweep.attempts) ? ((await send(t, sweep.attempts)) as A[]) : await sweep.attempts();
  await expectNotFound(answers, sweep.entity, sweep.hidden);
  expect(await sweep.unchanged()).toEqual(before);
  return answers;
}

/** Two 404 answers say the same but for the id: another tenant's id reads exactly like one that does not exist. */
export function expectSameAsUnknown(
  foreign: { error?: unknown },
  foreignId: string,
  unknown: { error?: unknown },
  unknownId: string,
) {
  const message = (answer: { error?: unknown }) => (answer.error as { message?: string } | undefined)?.message;
  expect(message(foreign)).toEqual(expect.any(String));
  expect(message(foreign)?.replace(foreignId, "ID")).toBe(message(unknown)?.replace(unknownId, "ID"));
}

/** Every row of the tables, in a stable order (to show that a refused request wrote nothing). */
export async function snapshotTables(db: Db, tables: (keyof Database & string)[]): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of tables) {
    out[table] = (await sql`select * from ${sql.table(table)} as r order by r::text`.execute(db)).rows;
  }
  return out;
}

/**
 * What every operation with a JSON body answers for a body it cannot take, checked on `path`: malformed JSON is
 * 400 `bad_request`, a non-JSON content type 415, no body or a JSON body that is not an object 400
 * `invalid_data` (entity `body`), and `oversized` (over the test server's 64 KiB limit) 413.
 */
export async function expectBadBodiesRefused(t: TestServer, path: string, oversized: unknown, method = "POST") {
  const invalid = { code: "invalid_data", entity: "body" };
  const cases: [RequestInit, number, Record<string, unknown>][] = [
    [json(method, '{"name":'), 400, { code: "bad_request", message: "Request body is not valid JSON." }],
    [{ method, headers: { "content-type": "text/plain" }, body: "x" }, 415, { code: "unsupported_media_type" }],
    [{ method }, 400, { ...invalid, errors: [expect.objectContaining({ code: "required", path: [] })] }],
    ...["[]", '"text"', "null", "42"].map((body): [RequestInit, number, Record<string, unknown>] => [
      json(method, body),
      400,
      invalid,
    ]),
    [json(method, oversized), 413, { code: "payload_too_large" }],
  ];
  for (const [init, status, body] of cases) {
    const res = await t.fetch(path, init);
    const label = `${method} ${path} ${String(init.body ?? "(no body)").slice(0, 40)}`;
    expect(res.status, label).toBe(status);
    expect(await res.json(), label).toMatchObject({ __typename: "error", status, ...body });
  }
}

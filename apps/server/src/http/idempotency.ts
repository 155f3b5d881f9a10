// Idempotency-Key on POST (spec/components/parameters/IdempotencyKey.yaml): the first request with a key is recorded
// per instance for 24 hours and its answer replayed to every repeat, so a client may retry a POST whose answer it
// never got without acting twice. The key is claimed by inserting its row (the unique index on instance and key is
// the lock, across processes over one PostgreSQL as within one); a repeat while the first request runs gets a 409
// at once rather than waiting for it, which would hold a connection (and a tool call can run for an hour).
import { createHash } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import type { Request, Response } from "express";
import { sql } from "kysely";
import { stringify } from "safe-stable-stringify";
import type { RequestContext } from "../context.ts";
import type { Db } from "../db/database.ts";
import { newId } from "../lib/ids.ts";
import type { SecretBox } from "../secrets/secret-box.ts";

/** What the spec allows: 1 to 255 printable ASCII characters. */
const KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;
/** Headers that belong to an answer; the rest (request id, date, length) belong to the response carrying it. */
const REPLAYED_HEADERS = ["location", "allow"];
/** Expired keys are deleted at most this often per process, at most SWEEP_BATCH at a time (bounded work). */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_BATCH = 1_000;

/** Binds a recorded answer's ciphertext to its row. */
export const idempotencyAad = (id: string) => `idempotency_keys:${id}`;

/**
 * The router's `beforePost` hook, called with the body as sent (before validation, so an invalid body's 400 is
 * recorded like any 4xx). Without the header the request just runs. With it: a malformed key is a 400; a
 * new (or expired) key is claimed and the answer recorded when it is sent; a repeat of a finished request replays
 * its answer with `Idempotent-Replayed: true`; the key with another path or body is a 422 whatever the state of
 * the first request; a repeat while the first request still runs is a 409.
 */
export function idempotency(db: Db, secrets: SecretBox) {
  let lastSweep = 0;
  return async (ctx: RequestContext, req: Request, res: Response, body: unknown): Promise<"answered" | "continue"> => {
    const key = req.get("Idempotency-Key");
    if (key === undefined) return "continue";
    if (!KEY_PATTERN.test(key)) {
      throw new ApiError("bad_request", "Idempotency-Key must be 1 to 255 printable ASCII characters.", {
        entity: "header",
        hint: "Send a fresh UUID per request.",
      });
    }
    if (Date.now() - lastSweep >= SWEEP_EVERY_MS) {
      lastSweep = Date.now();
      await sweepExpiredIdempotencyKeys(db);
    }
    const hash = hashRequest(req.method, req.originalUrl, body);
    // Twice at most: the row found in conflict can be released (a 5xx) before it is read; then the key is free.
    for (let attempt = 0; attempt < 2; attempt++) {
      const claimed = await claimIdempotencyKey(db, ctx.instanceId, key, hash);
      if (claimed) {
        recordAnswer(db, secrets, claimed, req, res);
        return "continue";
      }
      const first = await db
        .selectFrom("idempotency_keys")
        .select(["id", "request_hash", "status", "response_headers", "response_ciphertext"])
        .where("instance_id", "=", ctx.instanceId)
        .where("key", "=", key)
        .executeTakeFirst();
      if (!first) continue;
      if (first.request_hash !== hash) {
        throw new ApiError(
          "idempotency_key_reused",
          "This Idempotency-Key was used with a different request; use a new key for a new request.",
          { entity: "header" },
        );
      }
      if (first.status === null || first.response_ciphertext === null) break;
      res.status(first.status);
      for (const [name, value] of Object.entries(first.response_headers ?? {})) res.setHeader(name, value);
      res.setHeader("Idempotent-Replayed", "true");
      res.json(secrets.decryptJson(first.response_ciphertext, idempotencyAad(first.id)));
      return "answered";
    }
    throw new ApiError(
      "idempotency_conflict",
      "A request with this Idempotency-Key is still running; repeat it shortly to get its answer.",
      { entity: "header", headers: { "Retry-After": "1" } },
    );
  };
}

/** Method, path with query, and the body in a canonical form (key order does not make it another request). */
export function hashRequest(method: string, url: string, body: unknown): string {
  return createHash("sha256")
    .update(`${method} ${url}\n${stringify(body) ?? ""}`)
    .digest("base64url");
}

/**
 * Claims the key for a request: inserts its row, or takes over a row that expired or whose request was abandoned.
 * Abandoned means still running after 5 minutes: its process died mid-request (a live request records its answer
 * or releases the key when it ends), and without the takeover every retry would get a 409 for 24 hours. A request
 * that really runs longer loses its protection against a duplicate. The takeover gives the row a new id, so the
 * abandoned request, should it end after all, records nothing over its successor. Returns the row's id, or
 * undefined when another request holds the key.
 */
export async function claimIdempotencyKey(
  db: Db,
  instanceId: string,
  key: string,
  requestHash: string,
): Promise<string | undefined> {
  const id = newId("idk");
  const row = await db
    .insertInto("idempotency_keys")
    .values({ id, instance_id: instanceId, key, request_hash: requestHash, expires_at: sql`now() + interval '1 day'` })
    .onConflict((oc) =>
      oc
        .columns(["instance_id", "key"])
        .doUpdateSet({
          id,
          request_hash: requestHash,
          status: null,
          response_headers: null,
          response_ciphertext: null,
          created_at: sql`now()`,
          expires_at: sql`now() + interval '1 day'`,
        })
        .where(
          sql<boolean>`idempotency_keys.expires_at <= now()
            or (idempotency_keys.status is null and idempotency_keys.created_at <= now() - interval '5 minutes')`,
        ),
    )
    .returning("id")
    .executeTakeFirst();
  return row?.id;
}

/**
 * Records the answer as it is sent (success or an error from the app's error handler: both leave through
 * `res.json`), before the client gets it, so a repeat that follows the answer finds it. 5xx answers are not
 * recorded, and 429 neither: they mean "not done, try again" (the client retries them under the same key), and a
 * replay would make the failure permanent for 24 hours. The key is released instead, so the retry runs anew.
 */
function recordAnswer(db: Db, secrets: SecretBox, id: string, req: Request, res: Response): void {
  const send = res.json.bind(res);
  res.json = (payload: unknown) => {
    res.json = send;
    const status = res.statusCode;
    const record =
      status >= 500 || status === 429
        ? db.deleteFrom("idempotency_keys").where("id", "=", id).execute()
        : db
            .updateTable("idempotency_keys")
            .set({
              status,
              response_headers: JSON.stringify(
                Object.fromEntries(REPLAYED_HEADERS.flatMap((name) => headerEntry(res, name))),
              ),
              // The answer can hold a secret shown once (a session's `secret`): a replay must show it again (the
              // client never got it), so it is kept, encrypted like every secret at rest.
              response_ciphertext: secrets.encryptJson(payload, idempotencyAad(id)),
            })
            .where("id", "=", id)
            .execute();
    record
      .catch((err: unknown) => {
        // The answer still goes out; the key stays claimed until it counts as abandoned (claimIdempotencyKey).
        req.log.warn({ err }, "could not record the answer of an Idempotency-Key request");
      })
      .then(() => send(payload))
      // Sending happens outside the request's promise chain: a failure here must not become an unhandled rejection.
      .catch((err: unknown) => req.log.error({ err }, "could not send the answer of an Idempotency-Key request"));
    return res;
  };
}

function headerEntry(res: Response, name: string): [string, string][] {
  const value = res.getHeader(name);
  return value === undefined ? [] : [[name, String(value)]];
}

/** Deletes up to SWEEP_BATCH expired keys (oldest first); returns how many. */
export async function sweepExpiredIdempotencyKeys(db: Db): Promise<number> {
  const result = await db
    .deleteFrom("idempotency_keys")
    .where("id", "in", (eb) =>
      eb
        .selectFrom("idempotency_keys")
        .select("id")
        .where("expires_at", "<=", sql<Date>`now()`)
        .orderBy("expires_at")
        .limit(SWEEP_BATCH),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

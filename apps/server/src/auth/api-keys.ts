import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import type { Db } from "../db/database.ts";
import { newId } from "../lib/ids.ts";

/**
 * API keys look like `tp_<prefix>_<secret>`. The prefix is a non-secret lookup handle; only the SHA-256 of the
 * secret is stored (the secret is 256 random bits, so a fast hash is safe and keeps authentication cheap).
 */
const KEY_PATTERN = /^tp_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;
const CACHE_TTL_MS = 5_000;
const TOUCH_INTERVAL_MS = 60_000;

export interface ApiKeySummary {
  id: string;
  instance_id: string;
  name: string | null;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest();

export async function createInstance(db: Db, name: string): Promise<string> {
  const id = newId("ins");
  await db.insertInto("instances").values({ id, name }).execute();
  return id;
}

export async function createApiKey(
  db: Db,
  instanceId: string,
  name: string | null,
): Promise<{ key: string; summary: ApiKeySummary }> {
  const prefix = randomBytes(12)
    .toString("base64url")
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "0")
    .slice(0, 12);
  const secret = randomBytes(32).toString("base64url");
  const summary = await db
    .insertInto("api_keys")
    .values({ id: newId("key"), instance_id: instanceId, name, prefix, secret_hash: sha256(secret).toString("hex") })
    .returning(["id", "instance_id", "name", "prefix", "created_at", "last_used_at", "revoked_at"])
    .executeTakeFirstOrThrow();
  return { key: `tp_${prefix}_${secret}`, summary };
}

export function listApiKeys(db: Db): Promise<ApiKeySummary[]> {
  return db
    .selectFrom("api_keys")
    .select(["id", "instance_id", "name", "prefix", "created_at", "last_used_at", "revoked_at"])
    .orderBy("id")
    .execute();
}

/** How `keys list` shows a key's prefix; `keyLookup` reads it back. */
export const displayPrefix = (prefix: string) => `tp_${prefix}_…`;

/**
 * What names a key, in every form `keys list` prints and the key itself: the id (`key_…`), the prefix as listed
 * (`tp_<prefix>_…`, also typed with `...` or cut after the underscore), the bare prefix, or the whole key (only its
 * prefix is used: whoever holds the key may revoke it). Undefined for anything else.
 */
export function keyLookup(reference: string): { column: "id" | "prefix"; value: string } | undefined {
  const text = reference.trim();
  if (/^key_[0-9a-z]+$/.test(text)) return { column: "id", value: text };
  const prefix = /^(?:tp_)?([a-z0-9]{12})(?:_.*)?$/s.exec(text)?.[1];
  return prefix ? { column: "prefix", value: prefix } : undefined;
}

export async function revokeApiKey(db: Db, reference: string): Promise<ApiKeySummary | undefined> {
  const lookup = keyLookup(reference);
  if (!lookup) return undefined;
  return db
    .updateTable("api_keys")
    .set({ revoked_at: new Date() })
    .where(lookup.column, "=", lookup.value)
    .where("revoked_at", "is", null)
    .returning(["id", "instance_id", "name", "prefix", "created_at", "last_used_at", "revoked_at"])
    .executeTakeFirst();
}

interface CachedKey {
  keyId: string;
  instanceId: string;
  hash: Buffer;
  checkedAt: number;
  touchedAt: number;
}

/**
 * Verifies bearer keys. A verified key is remembered for a few seconds so a burst of requests costs one lookup;
 * a revocation therefore takes effect within CACHE_TTL_MS on every replica.
 */
export class ApiKeyVerifier {
  private readonly cache = new Map<string, CachedKey>();

  constructor(private readonly db: Db) {}

  async verify(authorization: string | undefined): Promise<{ instanceId: string; keyId: string }> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) throw unauthorized(authorization ? "The Authorization header is not `Bearer <API_KEY>`." : undefined);
    const match = KEY_PATTERN.exec(token);
    if (!match?.[1] || !match[2]) throw unauthorized("The API key is malformed.");
    const [, prefix, secret] = match;
    const now = Date.now();
    let entry = this.cache.get(prefix);
    if (!entry || now - entry.checkedAt > CACHE_TTL_MS) {
      const row = await this.db
        .selectFrom("api_keys")
        .select(["id", "instance_id", "secret_hash"])
        .where("prefix", "=", prefix)
        .where("revoked_at", "is", null)
        .executeTakeFirst();
      if (!row) {
        this.cache.delete(prefix);
        throw unauthorized("The API key is unknown or revoked.");
      }
      entry = {
        keyId: row.id,
        instanceId: row.instance_id,
        hash: Buffer.from(row.secret_hash, "hex"),
        checkedAt: now,
        touchedAt: entry?.touchedAt ?? 0,
      };
      this.cache.set(prefix, entry);
    }
    if (!timingSafeEqual(sha256(secret), entry.hash)) throw unauthorized("The API key is unknown or revoked.");
    if (now - entry.touchedAt > TOUCH_INTERVAL_MS) {
      entry.touchedAt = now;
      await this.db
        .updateTable("api_keys")
        .set({ last_used_at: new Date(now) })
        .where("id", "=", entry.keyId)
        .execute();
    }
    return { instanceId: entry.instanceId, keyId: entry.keyId };
  }
}

function unauthorized(detail?: string): ApiError {
  return new ApiError("unauthorized", detail ?? "Missing API key: send Authorization: Bearer <API_KEY>.", {
    hint: "Create a key with `pnpm keys create`.",
  });
}

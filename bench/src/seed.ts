// Fast bulk load of provider deployments: one `insert … select from generate_series` whose ids sort like the
// server's own (`pde_` + a lowercase ULID: 10 characters of millisecond time, then 16 of entropy).
import { createHash } from "node:crypto";
import type { Db } from "@toolplane/server";
import { sql } from "kysely";
import type { Seeded } from "./protocol.ts";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/** The ULID time part of a millisecond timestamp, lowercase, as the server's newId writes it. */
export function ulidTime(ms: number): string {
  let out = "";
  let rest = ms;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD.charAt(rest % 32) + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

/** The id the SQL below gives row `g`: time `base + g` ms, entropy from md5(g) (hex digits are Crockford digits). */
export function seededId(base: number, g: number): string {
  return `pde_${ulidTime(base + g)}${createHash("md5").update(String(g)).digest("hex").slice(0, 16)}`;
}

export async function seedDeployments(
  db: Db,
  { instanceId, providerId, rows }: { instanceId: string; providerId: string; rows: number },
): Promise<Seeded> {
  // Older than anything the benchmark creates through the API, so those rows sort after the seeded ones.
  const base = Date.now() - 30 * 86_400_000;
  const timeChars = Array.from(
    { length: 10 },
    (_, k) => `substr('${CROCKFORD}', ((t.ts >> ${45 - 5 * k}) & 31)::int + 1, 1)`,
  ).join(" || ");
  const started = performance.now();
  await db.transaction().execute(async (trx) => {
    // Bulk-load settings for this transaction only: no per-row FK triggers (every row references the one
    // instance and provider that exist), and secondary indexes rebuilt once afterwards from their own definitions.
    await sql`set local session_replication_role = replica`.execute(trx);
    const indexes = await sql<{ name: string; def: string }>`
      select indexname as name, indexdef as def from pg_indexes
      where tablename = 'provider_deployments' and indexname <> 'provider_deployments_pkey'`.execute(trx);
    for (const index of indexes.rows) await sql`drop index ${sql.id(index.name)}`.execute(trx);
    await sql`
      insert into provider_deployments (id, instance_id, provider_id, name, created_at, updated_at)
      select 'pde_' || ${sql.raw(timeChars)} || substr(md5(t.g::text), 1, 16), ${instanceId}, ${providerId},
             'seeded deployment ' || t.g, to_timestamp(t.ts / 1000.0), to_timestamp(t.ts / 1000.0)
      from (select g, ${sql.lit(base)}::bigint + g as ts from generate_series(1, ${sql.lit(rows)}) g) t`.execute(trx);
    for (const index of indexes.rows) await sql.raw(index.def).execute(trx);
  });
  await sql`analyze provider_deployments`.execute(db);
  const ms = performance.now() - started;
  const shallowId = seededId(base, 20);
  const deepId = seededId(base, rows - 30);
  const found = await db
    .selectFrom("provider_deployments")
    .select("id")
    .where("id", "in", [shallowId, deepId])
    .where("instance_id", "=", instanceId)
    .execute();
  if (found.length !== 2) throw new Error(`seeded ids not found: ${shallowId}, ${deepId}`);
  return { rows, ms, shallowId, deepId };
}

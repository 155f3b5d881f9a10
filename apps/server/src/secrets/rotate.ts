import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import { idempotencyAad } from "../http/idempotency.ts";
import { credentialAad, exportAad } from "../resources/provider-auth-configs/credential-data.ts";
import { clientSecretAad } from "../resources/provider-auth-credentials/service.ts";
import { configAad, vaultAad } from "../resources/provider-configs/service.ts";
import type { SecretBox } from "./secret-box.ts";

/** Every column that holds a ciphertext, and the additional data its rows are bound to. */
const ENCRYPTED = [
  { table: "provider_configs", column: "data_ciphertext", aad: configAad },
  { table: "provider_config_vaults", column: "data_ciphertext", aad: vaultAad },
  { table: "provider_auth_credentials", column: "client_secret_ciphertext", aad: clientSecretAad },
  { table: "provider_auth_configs", column: "credential_ciphertext", aad: credentialAad },
  { table: "provider_auth_exports", column: "value_ciphertext", aad: exportAad },
  { table: "idempotency_keys", column: "response_ciphertext", aad: idempotencyAad },
] as const;

/**
 * Re-encrypts every ciphertext made with an older key under the primary key, row by row (each row is
 * independent, so an interrupted run can simply be started again). Returns how many values changed.
 */
export async function rotateSecrets(db: Db, secrets: SecretBox): Promise<number> {
  let changed = 0;
  for (const { table, column, aad } of ENCRYPTED) {
    const rows = await sql<{ id: string; value: string }>`
      select id, ${sql.ref(column)} as value from ${sql.table(table)} where ${sql.ref(column)} is not null`.execute(db);
    for (const { id, value } of rows.rows) {
      if (!secrets.needsRotation(value)) continue;
      const fresh = secrets.encrypt(secrets.decrypt(value, aad(id)), aad(id));
      await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${fresh}
        where id = ${id} and ${sql.ref(column)} = ${value}`.execute(db);
      changed++;
    }
  }
  return changed;
}

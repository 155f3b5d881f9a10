import type { Db } from "../db/database.ts";
import { configAad, vaultAad } from "../resources/provider-configs/service.ts";
import type { SecretBox } from "./secret-box.ts";

/** Every column that holds a ciphertext, and the additional data its rows are bound to. */
const ENCRYPTED = [
  { table: "provider_configs", aad: configAad },
  { table: "provider_config_vaults", aad: vaultAad },
] as const;

/**
 * Re-encrypts every ciphertext made with an older key under the primary key, row by row (each row is
 * independent, so an interrupted run can simply be started again). Returns how many rows changed.
 */
export async function rotateSecrets(db: Db, secrets: SecretBox): Promise<number> {
  let changed = 0;
  for (const { table, aad } of ENCRYPTED) {
    const rows = await db.selectFrom(table).select(["id", "data_ciphertext"]).execute();
    for (const row of rows) {
      if (!secrets.needsRotation(row.data_ciphertext)) continue;
      const fresh = secrets.encrypt(secrets.decrypt(row.data_ciphertext, aad(row.id)), aad(row.id));
      await db
        .updateTable(table)
        .set({ data_ciphertext: fresh })
        .where("id", "=", row.id)
        .where("data_ciphertext", "=", row.data_ciphertext)
        .execute();
      changed++;
    }
  }
  return changed;
}

import { ApiError } from "@toolplane/server-stubs";
import type { Db } from "../../db/database.ts";

/** The references a session provider and a session template provider hold. */
export type ProviderReference = "provider_deployment_id" | "provider_config_id" | "provider_auth_config_id";

/**
 * Refuses (409) to delete what a provider of an active session or a session template still uses, naming the
 * user. Ended sessions and removed providers do not count: they keep the id only for reference. Call it inside
 * the deleting transaction after locking the row (session and template writes lock what they reference FOR
 * SHARE), so nothing can start using the row between this check and the delete.
 */
export async function assertNotUsedBySessions(
  trx: Db,
  column: ProviderReference,
  id: string,
  what: string,
  entity: string,
): Promise<void> {
  const session = await trx
    .selectFrom("session_providers as sp")
    .innerJoin("sessions as s", "s.id", "sp.session_id")
    .select(["s.id as session_id", "sp.id"])
    .where(`sp.${column}`, "=", id)
    .where("sp.status", "!=", "removed")
    .where("s.status", "=", "active")
    .limit(1)
    .executeTakeFirst();
  if (session) {
    throw new ApiError(
      "conflict",
      `Active session ${session.session_id} uses this ${what} (session provider ${session.id}); remove that provider from the session, or delete the session, first.`,
      { entity },
    );
  }
  const template = await trx
    .selectFrom("session_template_providers")
    .select(["id", "session_template_id"])
    .where(column, "=", id)
    .limit(1)
    .executeTakeFirst();
  if (template) {
    throw new ApiError(
      "conflict",
      `Session template ${template.session_template_id} uses this ${what} (template provider ${template.id}); remove that provider from the template first.`,
      { entity },
    );
  }
}

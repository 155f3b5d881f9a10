import { sql } from "kysely";

/**
 * Rows of the shared catalog (no instance) are every instance's; rows an instance owns (its custom providers'
 * providers, listings and servers) are its alone. `column` is the row's instance column, qualified when the
 * query joins tables that have one too.
 */
export const visibleTo = (instanceId: string, column = "instance_id") =>
  sql<boolean>`(${sql.ref(column)} is null or ${sql.ref(column)} = ${instanceId})`;

/** An `ilike` pattern matching values that contain `text` literally (its `%`, `_` and `\` are not wildcards). */
export const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, "\\$&")}%`;

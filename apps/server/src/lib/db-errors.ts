/** PostgreSQL unique_violation (both pg and PGlite expose the SQLSTATE as `code`). */
export const isUniqueViolation = (err: unknown): boolean => (err as { code?: unknown })?.code === "23505";

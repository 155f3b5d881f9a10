/** PostgreSQL unique_violation (both pg and PGlite expose the SQLSTATE as `code`). */
export const isUniqueViolation = (err: unknown): boolean => (err as { code?: unknown })?.code === "23505";

/** Socket-level failures reaching the database server (pg exposes the Node error code as `code`). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
]);

/**
 * SQLSTATEs of a database that is down, restarting or refusing connections: class 08 (connection exception),
 * 57P01–57P03 (admin/crash shutdown, cannot connect now) and 53300 (too many connections).
 */
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300)$/;

/**
 * Messages pg gives a connection lost mid-query, or a pool or client that could not connect in time; they carry
 * no code.
 */
const LOST_CONNECTION =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|timeout expired$|Client was closed)/;

/** Whether `err` says the database cannot be reached right now (an outage the server outlives), not a bad query. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (UNREACHABLE.has(code) || UNAVAILABLE_STATES.test(code))) return true;
  if (typeof message === "string" && LOST_CONNECTION.test(message)) return true;
  // An AggregateError (a host name resolving to several addresses, all refused) carries the causes in `errors`.
  const causes = (err as { errors?: unknown }).errors;
  return Array.isArray(causes) && causes.length > 0 && causes.every(isDatabaseUnavailable);
}

/** Database timestamps (Date from pg and PGlite) as the wire format: ISO 8601, milliseconds, `Z`. */
export const iso = (value: Date | string): string => new Date(value).toISOString();

export const isoOrNull = (value: Date | string | null): string | null => (value === null ? null : iso(value));

/**
 * A wire date-time as an instant, or null when it cannot be stored: RFC 3339 (and JSON Schema's `date-time`)
 * allows a leap second and year 0000, which neither `Date` nor PostgreSQL's timestamptz can hold.
 */
export function storableInstant(value: string): Date | null {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1 ? null : date;
}

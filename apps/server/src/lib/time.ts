/** Database timestamps (Date from pg and PGlite) as the wire format: ISO 8601, milliseconds, `Z`. */
export const iso = (value: Date | string): string => new Date(value).toISOString();

export const isoOrNull = (value: Date | string | null): string | null => (value === null ? null : iso(value));

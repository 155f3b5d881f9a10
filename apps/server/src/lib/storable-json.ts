// A lone surrogate (U+D800–U+DFFF without its pair): text PostgreSQL's jsonb cannot hold, like NUL.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// How JSON.stringify writes them: as \u escapes (paired surrogates stay raw characters). A false positive (an escaped
// backslash before "u0000") only costs the cleaning pass.
const ESCAPED_UNSTORABLE = /\\u(?:d[89a-f][0-9a-f]{2}|0000)/;

/**
 * JSON text PostgreSQL can store for any JSON value a client sent: characters jsonb refuses (lone surrogates, NUL)
 * become U+FFFD in strings and keys alike. For records of what was sent (tool call inputs and outputs), which must
 * be written whatever the client put in them; the value itself travels on unchanged.
 */
export function storableJson(value: unknown): string {
  const text = JSON.stringify(value);
  return ESCAPED_UNSTORABLE.test(text) ? JSON.stringify(clean(value)) : text;
}

const storable = (text: string) => text.replace(LONE_SURROGATE, "\ufffd").replaceAll("\0", "\ufffd");

function clean(value: unknown): unknown {
  if (typeof value === "string") return storable(value);
  if (Array.isArray(value)) return value.map(clean);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storable(k), clean(v)]));
  }
  return value;
}

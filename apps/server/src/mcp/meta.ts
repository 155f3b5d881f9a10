type Params = Record<string, unknown>;

/** A result without one `_meta` key (without `_meta` when nothing else is left in it). */
export function withoutMetaKey(result: Params, key: string): Params {
  const meta = result._meta as Params | undefined;
  if (!meta || !(key in meta)) return result;
  const { [key]: _key, ...kept } = meta;
  const { _meta: _omitted, ...rest } = result;
  return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}

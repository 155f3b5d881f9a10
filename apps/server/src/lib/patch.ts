import type { JsonObject } from "../db/schema.ts";

/** The columns a PATCH of name/description/metadata sets: omitted fields stay, null clears. */
export function describedPatch<N extends string | null>(body: {
  name?: N;
  description?: string | null;
  metadata?: JsonObject | null;
}) {
  return {
    ...(body.name === undefined ? {} : { name: body.name }),
    ...(body.description === undefined ? {} : { description: body.description }),
    ...(body.metadata === undefined ? {} : { metadata: body.metadata === null ? null : JSON.stringify(body.metadata) }),
    updated_at: new Date(),
  };
}

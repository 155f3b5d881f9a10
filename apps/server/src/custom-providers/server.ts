import type { components } from "@toolplane/types";
import type { Db } from "../db/database.ts";
import type { CustomProviderSource } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import { storedVariants } from "../resources/servers/service.ts";

type ServerSource = components["schemas"]["ServerSource"];

/**
 * How a custom provider's server is reached, from what its version declared rather than from the deployed runtime:
 * a function's runtime is this server's node binary and a path in its data directory, and a container's is the
 * engine's internal address, neither of which is the instance's business.
 */
export function customServerSource(source: CustomProviderSource): ServerSource {
  switch (source.type) {
    case "remote":
      return { type: "remote", remote: { url: source.remote_url, protocol: source.protocol } };
    case "function":
      return { type: "stdio", stdio: { command: "node", args: [source.entrypoint] } };
    case "container":
      return { type: "container", container: { image_ref: source.image_ref } };
  }
}

/**
 * Puts a custom provider's entry of `GET /servers` in step with it: one server row per custom provider (owned by
 * its instance, keyed by its catalog provider) carrying its name, description and status, and one variant for the
 * version in its `production` environment. Runs in the transaction that changed any of them.
 */
export async function syncCustomProviderServer(trx: Db, customProviderId: string): Promise<void> {
  const row = await trx
    .selectFrom("custom_providers as cp")
    .innerJoin("providers as p", "p.id", "cp.provider_id")
    .leftJoin("custom_provider_versions as cv", "cv.provider_version_id", "p.current_version_id")
    .leftJoin("provider_versions as v", "v.id", "p.current_version_id")
    .select([
      "cp.instance_id",
      "cp.provider_id",
      "cp.name",
      "cp.description",
      "cp.status",
      "cv.source",
      "v.config_schema",
      "v.created_at as version_created_at",
    ])
    .where("cp.id", "=", customProviderId)
    .executeTakeFirstOrThrow();
  const now = new Date();
  const current =
    row.source && row.config_schema && row.version_created_at
      ? {
          source: customServerSource(row.source),
          schema: row.config_schema,
          createdAt: new Date(row.version_created_at).toISOString(),
        }
      : null;
  const values = {
    name: row.name,
    description: row.description,
    status: row.status,
    // Custom providers declare no required auth: a token comes through their config, and a remote one's MCP OAuth
    // method is used only by servers that ask for it.
    variants: JSON.stringify(storedVariants(current, { oauthRequired: false, status: row.status })),
    updated_at: now,
  };
  await trx
    .insertInto("servers")
    .values({
      id: newId("srv"),
      instance_id: row.instance_id,
      provider_id: row.provider_id,
      metadata: "{}",
      ...values,
      created_at: now,
    })
    .onConflict((oc) => oc.column("provider_id").doUpdateSet(values))
    .execute();
}

import type { Db } from "../db/database.ts";
import type { CustomProviderError, Row } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import { syncCustomProviderServer } from "./server.ts";
import { encryptPassword, type PreparedVersion } from "./source.ts";
import { type CustomProviderRef, identifier } from "./views.ts";

/** Rollbacks can go this many versions back per environment. */
const HISTORY_LIMIT = 50;

export interface CommitInput {
  type: Row<"custom_provider_commits">["type"];
  trigger: Row<"custom_provider_commits">["trigger"];
  message: string;
  fromEnvironmentId: string | null;
  toEnvironmentId: string;
  targetVersionId: string;
}

export async function environmentNamed(trx: Db, customProviderId: string, name: "development" | "production") {
  return trx
    .selectFrom("custom_provider_environments")
    .selectAll()
    .where("custom_provider_id", "=", customProviderId)
    .where("name", "=", name)
    .executeTakeFirstOrThrow();
}

/**
 * Records a commit. `immediate` applies it now (its version is deployed, or it is the system commit that puts a
 * new version into development); otherwise it stays pending until the version's deployment ends.
 */
export async function recordCommit(
  trx: Db,
  ref: CustomProviderRef,
  input: CommitInput,
  immediate: boolean,
): Promise<string> {
  const env = await trx
    .selectFrom("custom_provider_environments")
    .select("current_version_id")
    .where("id", "=", input.toEnvironmentId)
    .executeTakeFirstOrThrow();
  const row = await trx
    .insertInto("custom_provider_commits")
    .values({
      id: newId("cpc"),
      custom_provider_id: ref.id,
      type: input.type,
      status: "pending",
      trigger: input.trigger,
      message: input.message,
      from_environment_id: input.fromEnvironmentId,
      to_environment_id: input.toEnvironmentId,
      target_version_id: input.targetVersionId,
      previous_version_id: env.current_version_id,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (immediate) await applyCommit(trx, ref, row);
  return row.id;
}

/**
 * Moves the environment to the commit's version; in `production` that is also the provider's current version and
 * its server's variant.
 */
async function applyCommit(trx: Db, ref: CustomProviderRef, commit: Row<"custom_provider_commits">): Promise<void> {
  const now = new Date();
  const env = await trx
    .selectFrom("custom_provider_environments")
    .selectAll()
    .where("id", "=", commit.to_environment_id)
    .forUpdate()
    .executeTakeFirstOrThrow();
  const previous = env.current_version_id;
  const history =
    commit.type === "rollback"
      ? env.history.slice(0, -1)
      : previous && previous !== commit.target_version_id
        ? [...env.history, previous].slice(-HISTORY_LIMIT)
        : env.history;
  await trx
    .updateTable("custom_provider_environments")
    .set({ current_version_id: commit.target_version_id, history: JSON.stringify(history), updated_at: now })
    .where("id", "=", env.id)
    .execute();
  if (env.name === "production") {
    const version = await trx
      .selectFrom("custom_provider_versions")
      .select("provider_version_id")
      .where("id", "=", commit.target_version_id)
      .executeTakeFirstOrThrow();
    await trx
      .updateTable("providers")
      .set({ current_version_id: version.provider_version_id, updated_at: now })
      .where("id", "=", ref.providerId)
      .execute();
    await syncCustomProviderServer(trx, ref.id);
  }
  await trx
    .updateTable("custom_provider_commits")
    .set({ status: "applied", applied_at: now, previous_version_id: previous })
    .where("id", "=", commit.id)
    .execute();
}

/** Creates a version with its provider version, deployment job and the system commit into development. */
export async function createVersion(
  trx: Db,
  ref: CustomProviderRef,
  prepared: PreparedVersion,
  trigger: Row<"custom_provider_versions">["deployment_trigger"],
  secrets: SecretBox,
): Promise<Row<"custom_provider_versions">> {
  const last = await trx
    .selectFrom("custom_provider_versions")
    .select((eb) => eb.fn.max("index").as("max"))
    .where("custom_provider_id", "=", ref.id)
    .executeTakeFirst();
  const index = (last?.max ?? 0) + 1;
  const providerVersionId = newId("prv");
  await trx
    .insertInto("provider_versions")
    .values({
      id: providerVersionId,
      provider_id: ref.providerId,
      version: identifier(index),
      status: "pending",
      runtime: JSON.stringify(prepared.runtime),
      config_schema: JSON.stringify(prepared.configSchema),
      tools: "[]",
    })
    .execute();
  const id = newId("cpv");
  const version = await trx
    .insertInto("custom_provider_versions")
    .values({
      id,
      custom_provider_id: ref.id,
      provider_version_id: providerVersionId,
      index,
      status: "queued",
      source: JSON.stringify(prepared.source),
      password_ciphertext: encryptPassword(secrets, id, prepared.password),
      deployment_id: newId("cpd"),
      deployment_trigger: trigger,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx.insertInto("custom_provider_jobs").values({ version_id: id }).execute();
  const development = await environmentNamed(trx, ref.id, "development");
  await recordCommit(
    trx,
    ref,
    {
      type: "merge_version_into_environment",
      trigger: "system",
      message: `Merge version ${identifier(index)} into development`,
      fromEnvironmentId: null,
      toEnvironmentId: development.id,
      targetVersionId: id,
    },
    true,
  );
  return version;
}

/**
 * After a deployment ends: applies or fails the commits that waited for it and, on success, fills a still
 * empty production with a system commit.
 */
export async function settleDeployment(
  trx: Db,
  ref: CustomProviderRef,
  version: Row<"custom_provider_versions">,
  error: CustomProviderError | null,
): Promise<void> {
  const pending = await trx
    .selectFrom("custom_provider_commits")
    .selectAll()
    .where("target_version_id", "=", version.id)
    .where("status", "=", "pending")
    .orderBy("id")
    .execute();
  for (const commit of pending) {
    if (!error) await applyCommit(trx, ref, commit);
    else {
      await trx
        .updateTable("custom_provider_commits")
        .set({
          status: "failed",
          error: JSON.stringify({
            code: "deployment_failed",
            message: `Version ${identifier(version.index)} failed to deploy (${error.code}); the environment kept its version.`,
          }),
        })
        .where("id", "=", commit.id)
        .execute();
    }
  }
  if (error) return;
  const production = await environmentNamed(trx, ref.id, "production");
  if (production.current_version_id !== null) return;
  const development = await environmentNamed(trx, ref.id, "development");
  await recordCommit(
    trx,
    ref,
    {
      type: "merge_version_into_environment",
      trigger: "system",
      message: `Merge version ${identifier(version.index)} into production, which held no version`,
      fromEnvironmentId: development.id,
      toEnvironmentId: production.id,
      targetVersionId: version.id,
    },
    true,
  );
}

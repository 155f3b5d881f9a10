import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { maskUrlCredentials } from "@toolplane/server-stubs";
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../db/database.ts";
import type { CatalogTool, CustomProviderError, Runtime } from "../db/schema.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import { type DeployOptions, deployVersion } from "./deploy.ts";
import { DeployError } from "./deploy-error.ts";
import { settleDeployment } from "./environments.ts";
import { ProbeError } from "./probe.ts";
import { passwordAad } from "./source.ts";
import { refOf } from "./views.ts";

const wakeups = new EventEmitter();
wakeups.setMaxListeners(0);

/** Tells the runners in this process that a job was queued (other processes find it on their next poll). */
export const notifyDeployJobs = () => wakeups.emit("job");

export interface JobRunnerOptions extends Partial<DeployOptions> {
  db: Db;
  /** Decrypts container registry passwords. */
  secrets: SecretBox;
  functionsDir: string;
  logger?: Logger;
  /** How often the queue is polled when nothing wakes the runner. */
  pollIntervalMs?: number;
  concurrency?: number;
  /** How long a claim holds before another runner may take the job over. */
  leaseMs?: number;
}

/** A job claimed this often was interrupted each time (its process died): it fails instead of looping. */
const MAX_ATTEMPTS = 5;

type Outcome = { ok: true; runtime: Runtime; tools: CatalogTool[] } | { ok: false; error: CustomProviderError };

interface Claim {
  versionId: string;
  token: string;
  attempts: number;
}

/**
 * Deploys custom provider versions from the `custom_provider_jobs` table. Jobs are claimed with
 * `for update skip locked`, so several runners (processes) can share one database; each claim carries a token
 * and a lease, and only the holder of the current token may record the outcome. `start` re-queues every running
 * job: with one server process per database those were left by a process that died; with several, a live
 * process's job may run twice, which the token makes harmless (the later claim records). A job whose lease ran
 * out is taken over as well. `stop` abandons in-flight deployments (left running, for the next start).
 */
export class DeployJobRunner {
  private readonly options: Required<Omit<JobRunnerOptions, "logger" | "dockerHost">> & JobRunnerOptions;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly inFlight = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private readonly onJob = () => this.wake?.();

  constructor(options: JobRunnerOptions) {
    this.options = {
      pollIntervalMs: 1000,
      concurrency: 2,
      leaseMs: 10 * 60_000,
      remoteTimeoutMs: 30_000,
      ...options,
    };
  }

  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    const requeued = await this.options.db
      .updateTable("custom_provider_jobs")
      .set({ state: "queued", claim_token: null, lease_until: null })
      .where("state", "=", "running")
      .executeTakeFirst();
    if (requeued.numUpdatedRows > 0n) {
      this.options.logger?.info({ jobs: Number(requeued.numUpdatedRows) }, "re-queued interrupted deployments");
    }
    wakeups.on("job", this.onJob);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    wakeups.off("job", this.onJob);
    for (const job of this.inFlight.values()) job.controller.abort();
    this.wake?.();
    await this.loop;
    await Promise.all([...this.inFlight.values()].map((j) => j.done));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        while (!this.stopped && this.inFlight.size < this.options.concurrency) {
          const claim = await this.claim();
          if (!claim) break;
          const controller = new AbortController();
          const done = this.deploy(claim, controller.signal).finally(() => {
            this.inFlight.delete(claim.versionId);
            this.wake?.();
          });
          this.inFlight.set(claim.versionId, { controller, done });
        }
      } catch (error) {
        this.options.logger?.error({ err: error }, "deployment job runner could not claim a job");
      }
      if (this.stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollIntervalMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  private async claim(): Promise<Claim | undefined> {
    const token = randomUUID();
    return this.options.db.transaction().execute(async (trx) => {
      const job = await trx
        .selectFrom("custom_provider_jobs")
        .select(["version_id"])
        .where((eb) =>
          eb.or([
            eb("state", "=", "queued"),
            eb.and([eb("state", "=", "running"), eb("lease_until", "<", sql<Date>`now()`)]),
          ]),
        )
        .orderBy("created_at")
        .limit(1)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (!job) return undefined;
      const claimed = await trx
        .updateTable("custom_provider_jobs")
        .set((eb) => ({
          state: "running",
          claim_token: token,
          attempts: eb("attempts", "+", 1),
          lease_until: sql<Date>`now() + ${`${this.options.leaseMs} milliseconds`}::interval`,
        }))
        .where("version_id", "=", job.version_id)
        .returning(["attempts"])
        .executeTakeFirstOrThrow();
      await trx
        .updateTable("custom_provider_versions")
        .set({ status: "deploying", updated_at: new Date() })
        .where("id", "=", job.version_id)
        .execute();
      return { versionId: job.version_id, token, attempts: claimed.attempts };
    });
  }

  private async deploy(claim: Claim, signal: AbortSignal): Promise<void> {
    const { db, logger } = this.options;
    const startedAt = performance.now();
    logger?.info({ versionId: claim.versionId, attempt: claim.attempts }, "deployment started");
    let outcome: Outcome;
    try {
      const version = await db
        .selectFrom("custom_provider_versions as v")
        .innerJoin("provider_versions as pv", "pv.id", "v.provider_version_id")
        .select(["v.source", "v.password_ciphertext", "pv.runtime"])
        .where("v.id", "=", claim.versionId)
        .executeTakeFirstOrThrow();
      if (claim.attempts > MAX_ATTEMPTS) {
        throw new DeployError(
          "deployment_interrupted",
          `The deployment was interrupted ${claim.attempts - 1} times (the server stopped while it ran).`,
        );
      }
      const password =
        version.password_ciphertext === null
          ? null
          : this.options.secrets.decrypt(version.password_ciphertext, passwordAad(claim.versionId));
      const deployed = await deployVersion(
        { id: claim.versionId, source: version.source, runtime: version.runtime, password },
        {
          functionsDir: this.options.functionsDir,
          dockerHost: this.options.dockerHost,
          remoteTimeoutMs: this.options.remoteTimeoutMs,
        },
        signal,
      );
      outcome = { ok: true, ...deployed };
    } catch (error) {
      if (error instanceof ProbeError || error instanceof DeployError) {
        // Stored and shown on the version: masked again in case a message quotes a URL with credentials.
        outcome = { ok: false, error: { code: error.code, message: maskUrlCredentials(error.message) } };
      } else {
        logger?.error({ err: error, versionId: claim.versionId }, "custom provider deployment failed unexpectedly");
        outcome = {
          ok: false,
          error: { code: "internal_error", message: "The deployment failed unexpectedly; the server log has details." },
        };
      }
    }
    // Stopping abandons the job, which stays `running` until the next start re-queues it.
    if (signal.aborted) return;
    try {
      await this.finish(claim, outcome);
    } catch (error) {
      logger?.error({ err: error, versionId: claim.versionId }, "could not record a deployment's outcome");
      return;
    }
    const ms = Math.round(performance.now() - startedAt);
    if (outcome.ok)
      logger?.info({ versionId: claim.versionId, ms, tools: outcome.tools.length }, "deployment succeeded");
    else
      logger?.warn(
        { versionId: claim.versionId, ms, code: outcome.error.code, reason: outcome.error.message },
        "deployment failed",
      );
  }

  private async finish(claim: Claim, outcome: Outcome): Promise<void> {
    await this.options.db.transaction().execute(async (trx) => {
      // Only the current claim may record: a job taken over after its lease ran out belongs to the new holder.
      const job = await trx
        .selectFrom("custom_provider_jobs")
        .select("claim_token")
        .where("version_id", "=", claim.versionId)
        .forUpdate()
        .executeTakeFirst();
      if (job?.claim_token !== claim.token) return;
      const now = new Date();
      const version = await trx
        .updateTable("custom_provider_versions")
        .set({
          status: outcome.ok ? "deployment_succeeded" : "deployment_failed",
          deployment_error: outcome.ok ? null : JSON.stringify(outcome.error),
          updated_at: now,
        })
        .where("id", "=", claim.versionId)
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .updateTable("provider_versions")
        .set(
          outcome.ok
            ? {
                status: "released",
                runtime: JSON.stringify(outcome.runtime),
                tools: JSON.stringify(outcome.tools),
                updated_at: now,
              }
            : { status: "failed", updated_at: now },
        )
        .where("id", "=", version.provider_version_id)
        .execute();
      await trx.deleteFrom("custom_provider_jobs").where("version_id", "=", claim.versionId).execute();
      const customProvider = await trx
        .selectFrom("custom_providers")
        .selectAll()
        .where("id", "=", version.custom_provider_id)
        .forUpdate()
        .executeTakeFirstOrThrow();
      await settleDeployment(trx, refOf(customProvider), version, outcome.ok ? null : outcome.error);
    });
  }
}

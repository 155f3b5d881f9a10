import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unwrap } from "@toolplane/client";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { DeployJobRunner } from "../../src/custom-providers/job-runner.ts";
import { listMigrations, migrate } from "../../src/db/migrate.ts";
import { UpstreamCredentials } from "../../src/oauth/upstream-credentials.ts";
import { SecretBox } from "../../src/secrets/secret-box.ts";
import {
  closedPortUrl,
  createRemote,
  firstVersion,
  REMOTE_TOOLS,
  startMcpUpstream,
  waitForDeployment,
} from "../custom-providers/support.ts";
import { deploymentWithApp, followFlow, redirectQuery, useOAuthSetup } from "../oauth/support.ts";

const { t, oauth, provider } = useOAuthSetup();

type Line = Record<string, unknown>;
const parse = (text: string): Line[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);

/** A logger whose JSON lines the test reads back. */
function capture() {
  let text = "";
  return { logger: pino({ level: "info" }, { write: (line: string) => (text += line) }), text: () => text };
}

describe("log lines", () => {
  it("logs OAuth setups completed and failed, never their tokens or client secret", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const setup = () =>
      unwrap(
        t.client.POST("/provider-deployments/{provider_deployment_id}/oauth-setups", {
          params: { path: { provider_deployment_id: app.deploymentId } },
          body: { name: "Logged", config: {} },
        }),
      );
    const completed = await setup();
    await followFlow(completed.url ?? "");
    const denied = await setup();
    await followFlow(denied.url ?? "", {
      beforeCallback: (callback) => {
        callback.searchParams.delete("code");
        callback.searchParams.set("error", "access_denied");
      },
    });

    const lines = parse(t.logs());
    expect(lines.find((l) => l.msg === "OAuth setup completed")).toMatchObject({
      flowId: completed.id,
      providerAuthConfigId: expect.stringMatching(/^pac_/),
    });
    expect(lines.find((l) => l.msg === "OAuth setup failed")).toMatchObject({
      flowId: denied.id,
      code: "access_denied",
      reason: "The user denied consent (access_denied).",
    });
    expect(t.logs()).not.toContain(app.clientSecret);
  });

  it("logs a token refresh the provider refused, without the refresh token", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const setup = await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/oauth-setups", {
        params: { path: { provider_deployment_id: app.deploymentId } },
        body: { name: "Expiring", config: {}, redirect_url: "https://app.example.test/done" },
      }),
    );
    oauth.expireNextTokenIn(10);
    const flow = await followFlow(setup.url ?? "");
    const authConfigId = redirectQuery(flow.callback).provider_auth_config_id ?? "";
    oauth.failNextToken(400, "invalid_grant");
    // As the gateway obtains credentials before an upstream call.
    const credentials = new UpstreamCredentials({ db: t.db, secrets: t.secrets });
    await expect(credentials.credentialFor(t.tenant.instanceId, authConfigId)).rejects.toThrow();

    expect(parse(t.logs()).find((l) => l.msg === "OAuth token refresh failed")).toMatchObject({
      authConfigId,
      status: "refresh_failed",
      reason: "The provider's token endpoint answered 400 (invalid_grant).",
    });
    expect(t.logs()).not.toContain(String(oauth.issued.at(-1)?.refresh_token));
  });

  it("logs a deployment's start and success, and a failed one with its code", async () => {
    const upstream = await startMcpUpstream({ tools: REMOTE_TOOLS });
    const log = capture();
    const functionsDir = mkdtempSync(join(tmpdir(), "toolplane-functions-"));
    const runner = new DeployJobRunner({
      db: t.db,
      secrets: new SecretBox([t.secretKey]),
      functionsDir,
      pollIntervalMs: 50,
      remoteTimeoutMs: 10_000,
      logger: log.logger,
    });
    await runner.start();
    try {
      const good = await createRemote(t, upstream.url, "Logged weather");
      const goodVersion = await firstVersion(t, good.id);
      await waitForDeployment(t, good.id, goodVersion.id);
      const bad = await createRemote(t, await closedPortUrl(), "Unreachable");
      const badVersion = await firstVersion(t, bad.id);
      await waitForDeployment(t, bad.id, badVersion.id);

      const lines = parse(log.text());
      expect(lines.filter((l) => l.msg === "deployment started").map((l) => l.versionId)).toEqual(
        expect.arrayContaining([goodVersion.id, badVersion.id]),
      );
      expect(lines.find((l) => l.msg === "deployment succeeded")).toMatchObject({
        versionId: goodVersion.id,
        tools: REMOTE_TOOLS.length,
      });
      expect(lines.find((l) => l.msg === "deployment failed")).toMatchObject({
        versionId: badVersion.id,
        code: expect.any(String),
        reason: expect.any(String),
      });
    } finally {
      await runner.stop();
      await upstream.close();
      rmSync(functionsDir, { recursive: true, force: true });
    }
  });

  it("logs each migration as it is applied, with its time", async () => {
    // The test database has every migration of the repo: only this extra one is pending.
    const extra = { version: "9999_observability_log_test", sql: "create table observability_log_test (x int);\n" };
    const log = capture();
    expect(await migrate(t.db, [...listMigrations(), extra], log.logger)).toEqual([extra.version]);
    expect(parse(log.text())).toEqual([
      expect.objectContaining({ msg: "applying migration", migration: `${extra.version}.sql` }),
      expect.objectContaining({ msg: "applied migration", migration: `${extra.version}.sql`, ms: expect.any(Number) }),
    ]);
  });
});

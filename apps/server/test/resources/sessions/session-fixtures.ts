import { expect } from "vitest";
import { catalogGithub, createAuthConfig, createCredentials } from "../../support/auth-fixtures.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { createInlineConfig, deploy, expectCreated } from "../../support/deployment-fixtures.ts";
import type { TestServer } from "../../support/server.ts";

/** Helpers shared by the session, session provider, template and template provider tests. */

type Client = TestServer["client"];

export { ISO } from "../../support/auth-fixtures.ts";

export const deploymentRef = (id: string) => ({ type: "reference" as const, provider_deployment_id: id });
export const configRef = (id: string) => ({ type: "reference" as const, provider_config_id: id });
export const authConfigRef = (id: string) => ({ type: "reference" as const, provider_auth_config_id: id });

/** A GitHub deployment with an inline config and a (pending OAuth) auth config: every reference an entry takes. */
export async function githubSetup(t: TestServer, client: Client = t.client, name = "GitHub") {
  const github = await catalogGithub(t.db);
  const deployment = await deploy(client, github.providerId, name);
  const config = await createInlineConfig(client, deployment.id, `${name} config`, { toolsets: "repos" });
  const credentials = await createCredentials(client, deployment.id);
  const authConfig = await createAuthConfig(client, deployment.id, github.oauthMethodId, credentials.id, {
    name: `${name} connection`,
  });
  return { providerId: github.providerId, deployment, config, authConfig };
}

/** A deployment of the built-in `everything` provider (no config, no auth). */
export async function everythingDeployment(t: TestServer, client: Client = t.client, name = "Everything") {
  const everything = await catalogProvider(t.db, "everything");
  return { providerId: everything.providerId, deployment: await deploy(client, everything.providerId, name) };
}

export async function createSession(client: Client, body: Record<string, unknown>) {
  return expectCreated(client.POST("/sessions", { body: body as never }));
}

export async function createTemplate(client: Client, body: Record<string, unknown>) {
  return expectCreated(client.POST("/session-templates", { body: body as never }));
}

export async function listSessionProviders(client: Client, sessionId: string) {
  const res = await client.GET("/sessions/{session_id}/providers", { params: { path: { session_id: sessionId } } });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  if (!res.data) throw new Error("no body");
  return res.data.items;
}

export async function countRows(
  db: TestServer["db"],
  table: "sessions" | "session_providers" | "session_templates" | "session_template_providers",
) {
  const row = await db.selectFrom(table).select(db.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Row counts of every session table (to show a refused request wrote nothing). */
export async function sessionCounts(db: TestServer["db"]) {
  const tables = ["sessions", "session_providers", "session_templates", "session_template_providers"] as const;
  return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, await countRows(db, table)])));
}

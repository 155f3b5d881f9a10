import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import type { TestServer } from "../../support/server.ts";

/**
 * Helpers shared by the provider auth route tests (credentials, auth configs, exports, imports). Everything goes
 * through the API except looking up the built-in catalog's ids.
 */

type Client = TestServer["client"];

export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The built-in `github` provider and its two auth methods (`oauth` and `token`). */
export interface Github {
  providerId: string;
  oauthMethodId: string;
  tokenMethodId: string;
}

export async function catalogGithub(db: TestServer["db"]): Promise<Github> {
  const provider = await db
    .selectFrom("providers")
    .select("id")
    .where("slug", "=", "github")
    .where("instance_id", "is", null)
    .executeTakeFirstOrThrow();
  const methods = await db
    .selectFrom("provider_auth_methods")
    .select(["id", "key", "type"])
    .where("provider_id", "=", provider.id)
    .execute();
  const oauth = methods.find((m) => m.key === "oauth");
  const token = methods.find((m) => m.key === "token");
  if (oauth?.type !== "oauth" || !token || token.type !== "token") {
    throw new Error(`unexpected github auth methods: ${JSON.stringify(methods)}`);
  }
  return { providerId: provider.id, oauthMethodId: oauth.id, tokenMethodId: token.id };
}

/** The built-in `everything` provider, which has no auth methods. */
export async function catalogEverything(db: TestServer["db"]): Promise<string> {
  const provider = await db
    .selectFrom("providers")
    .select("id")
    .where("slug", "=", "everything")
    .where("instance_id", "is", null)
    .executeTakeFirstOrThrow();
  return provider.id;
}

/** A unique, recognisable secret string (so a leak can be searched for in any response or row). */
export const secret = (label: string) => `${label}-${randomBytes(12).toString("hex")}`;

export async function deploy(client: Client, providerId: string, name = "GitHub") {
  const res = await client.POST("/provider-deployments", { body: { name, provider_id: providerId } });
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

export async function createCredentials(
  client: Client,
  deploymentId: string,
  options: {
    name?: string;
    clientId?: string;
    clientSecret?: string;
    scopes?: string[];
    description?: string;
    metadata?: Record<string, unknown>;
  } = {},
) {
  const res = await client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
    params: { path: { provider_deployment_id: deploymentId } },
    body: {
      name: options.name ?? "OAuth app",
      ...(options.description === undefined ? {} : { description: options.description }),
      ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      config: {
        type: "oauth",
        clientId: options.clientId ?? `Iv1.${randomBytes(6).toString("hex")}`,
        clientSecret: options.clientSecret ?? secret("client-secret"),
        ...(options.scopes === undefined ? {} : { scopes: options.scopes }),
      },
    },
  });
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

export async function createAuthConfig(
  client: Client,
  deploymentId: string,
  methodId: string,
  credentialsId: string,
  extra: { name?: string; description?: string; metadata?: Record<string, unknown> } = {},
) {
  const res = await client.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
    params: { path: { provider_deployment_id: deploymentId } },
    body: {
      name: extra.name ?? "Octocat's GitHub",
      provider_auth_method_id: methodId,
      credentials: { type: "reference", provider_auth_credentials_id: credentialsId },
      ...(extra.description === undefined ? {} : { description: extra.description }),
      ...(extra.metadata === undefined ? {} : { metadata: extra.metadata }),
    },
  });
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

export async function importInto(
  client: Client,
  deploymentId: string,
  authConfigId: string,
  value: Record<string, unknown>,
  extra: { note?: string; providerAuthMethodId?: string; metadata?: Record<string, unknown> } = {},
) {
  const res = await client.POST(
    "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports",
    {
      params: { path: { provider_deployment_id: deploymentId, provider_auth_config_id: authConfigId } },
      body: { note: extra.note ?? "Imported by a test", value, ...withoutNote(extra) },
    },
  );
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

const withoutNote = ({ note: _note, ...rest }: { note?: string }) => rest;

export async function exportFrom(
  client: Client,
  deploymentId: string,
  authConfigId: string,
  note = "Exported by a test",
  metadata?: Record<string, unknown>,
) {
  const res = await client.POST(
    "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/exports",
    {
      params: { path: { provider_deployment_id: deploymentId, provider_auth_config_id: authConfigId } },
      body: { note, ...(metadata === undefined ? {} : { metadata }) },
    },
  );
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

export async function getAuthConfig(client: Client, deploymentId: string, authConfigId: string) {
  const res = await client.GET(
    "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}",
    {
      params: { path: { provider_deployment_id: deploymentId, provider_auth_config_id: authConfigId } },
    },
  );
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  if (!res.data) throw new Error("no body");
  return res.data;
}

/** An OAuth token set as an import `value`, with fresh secret tokens. */
export function tokenSet(overrides: Record<string, unknown> = {}) {
  return {
    access_token: secret("gho"),
    refresh_token: secret("ghr"),
    token_type: "Bearer",
    scope: "repo read:org",
    expires_at: new Date(Date.now() + 8 * 3600_000).toISOString(),
    ...overrides,
  };
}

/** A raw JSON request (for bodies and headers the typed client cannot send). */
export const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** Everything under a deployment, as a raw path. */
export const dep = (deploymentId: string) => `/provider-deployments/${deploymentId}`;
export const cfg = (deploymentId: string, authConfigId: string) => `${dep(deploymentId)}/auth-configs/${authConfigId}`;

export async function countRows(
  db: TestServer["db"],
  table: "provider_auth_credentials" | "provider_auth_configs" | "provider_auth_exports" | "provider_auth_imports",
) {
  const row = await db.selectFrom(table).select(db.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

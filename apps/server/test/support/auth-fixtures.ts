import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { deploy, expectCreated } from "./deployment-fixtures.ts";
import { expectCrossTenantNotFound, type Operation } from "./security.ts";
import type { Tenant, TestServer } from "./server.ts";

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

export function createCredentials(
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
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
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
    }),
  );
}

export function createAuthConfig(
  client: Client,
  deploymentId: string,
  methodId: string,
  credentialsId: string,
  extra: { name?: string; description?: string; metadata?: Record<string, unknown> } = {},
) {
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: {
        name: extra.name ?? "Octocat's GitHub",
        provider_auth_method_id: methodId,
        credentials: { type: "reference", provider_auth_credentials_id: credentialsId },
        ...(extra.description === undefined ? {} : { description: extra.description }),
        ...(extra.metadata === undefined ? {} : { metadata: extra.metadata }),
      },
    }),
  );
}

export function importInto(
  client: Client,
  deploymentId: string,
  authConfigId: string,
  value: Record<string, unknown>,
  extra: { note?: string; providerAuthMethodId?: string; metadata?: Record<string, unknown> } = {},
) {
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports", {
      params: { path: { provider_deployment_id: deploymentId, provider_auth_config_id: authConfigId } },
      body: { note: extra.note ?? "Imported by a test", value, ...withoutNote(extra) },
    }),
  );
}

const withoutNote = ({ note: _note, ...rest }: { note?: string }) => rest;

export function exportFrom(
  client: Client,
  deploymentId: string,
  authConfigId: string,
  note = "Exported by a test",
  metadata?: Record<string, unknown>,
) {
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/exports", {
      params: { path: { provider_deployment_id: deploymentId, provider_auth_config_id: authConfigId } },
      body: { note, ...(metadata === undefined ? {} : { metadata }) },
    }),
  );
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

/** Everything under a deployment, as a raw path. */
export const dep = (deploymentId: string) => `/provider-deployments/${deploymentId}`;
export const cfg = (deploymentId: string, authConfigId: string) => `${dep(deploymentId)}/auth-configs/${authConfigId}`;

/** A deployment of github with OAuth credentials and a pending OAuth auth config (nothing imported yet). */
export async function pendingAuthConfig(client: Client, github: Github) {
  const deployment = await deploy(client, github.providerId);
  const credentials = await createCredentials(client, deployment.id);
  const config = await createAuthConfig(client, deployment.id, github.oauthMethodId, credentials.id);
  return { deployment, credentials, config };
}

/** An auth config of the tenant holding a fresh imported OAuth token set. */
export async function activeAuthConfig(client: Client, github: Github, note = "Imported by a test") {
  const { deployment, credentials, config } = await pendingAuthConfig(client, github);
  const tokens = tokenSet();
  const imported = await importInto(client, deployment.id, config.id, tokens, { note });
  return { deployment, credentials, config, tokens, imported };
}

/**
 * The cross-tenant sweep of a collection under an auth config (`exports`, `imports`): under their deployment,
 * under my deployment with their auth config, and their item under my auth config, every operation is the
 * documented 404 (naming the deployment, the auth config, the item) saying none of `hidden`, and writes
 * nothing; my list, even bounded by their item's id, never shows it; their item still reads the same to them.
 */
export async function expectAuthConfigItemsHidden(
  t: TestServer,
  sweep: {
    collection: "exports" | "imports";
    itemEntity: string;
    mine: { deploymentId: string; configId: string };
    theirs: { owner: Tenant; deploymentId: string; configId: string; item: { id: string } };
    /** A create request for the collection. */
    create: () => RequestInit;
    /** More GET paths under the collection besides the item (like `schema`). */
    more?: string[];
    hidden: string[];
    unchanged: () => Promise<unknown>;
  },
) {
  const { collection, theirs, mine } = sweep;
  const operations = (base: string): Operation[] => [
    [base, { method: "GET" }],
    [base, sweep.create()],
    [`${base}/${theirs.item.id}`, { method: "GET" }],
    ...(sweep.more ?? []).map((p): Operation => [`${base}/${p}`, { method: "GET" }]),
  ];
  const theirBase = `${cfg(theirs.deploymentId, theirs.configId)}/${collection}`;
  const myBase = `${cfg(mine.deploymentId, mine.configId)}/${collection}`;
  const common = { hidden: sweep.hidden, unchanged: sweep.unchanged };
  await expectCrossTenantNotFound(t, { ...common, entity: "provider.deployment", attempts: operations(theirBase) });
  await expectCrossTenantNotFound(t, {
    ...common,
    entity: "provider.auth_config",
    attempts: operations(`${cfg(mine.deploymentId, theirs.configId)}/${collection}`),
  });
  await expectCrossTenantNotFound(t, {
    ...common,
    entity: sweep.itemEntity,
    attempts: [[`${myBase}/${theirs.item.id}`, { method: "GET" }]],
  });
  for (const query of ["", `?after=${theirs.item.id}`, `?before=${theirs.item.id}&order=desc`]) {
    const res = await t.fetch(`${myBase}${query}`);
    const text = await res.text();
    expect(res.status, query).toBe(200);
    expect(text, query).not.toContain(theirs.item.id);
    for (const leak of sweep.hidden) expect(text, query).not.toContain(leak);
  }
  const own = await fetch(`${t.url}${theirBase}/${theirs.item.id}`, {
    headers: { authorization: `Bearer ${theirs.owner.apiKey}` },
  });
  expect(own.status).toBe(200);
  expect(await own.json()).toEqual(theirs.item);
}

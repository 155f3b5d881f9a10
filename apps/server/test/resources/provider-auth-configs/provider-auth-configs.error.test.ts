import type { ErrorBody } from "@toolplane/client";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../src/lib/ids.ts";
import { catalogEverything, catalogGithub, createAuthConfig, createCredentials } from "../../support/auth-fixtures.ts";
import { deploy, underDeployment } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json } from "../../support/security.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));
let deploymentId: string;
let credentialsId: string;
beforeAll(async () => {
  deploymentId = (await deploy(t.client, github.providerId)).id;
  credentialsId = (await createCredentials(t.client, deploymentId)).id;
});

const UNKNOWN_DEPLOYMENT = "pde_00000000000000000000000000";
const UNKNOWN_CONFIG = "pac_00000000000000000000000000";
const { collection, item } = underDeployment("auth-configs");
const snapshot = () => t.db.selectFrom("provider_auth_configs").selectAll().orderBy("id").execute();

const body = (overrides: Record<string, unknown> = {}) => ({
  name: "Connection",
  provider_auth_method_id: github.oauthMethodId,
  credentials: { type: "reference", provider_auth_credentials_id: credentialsId },
  ...overrides,
});

/** An OAuth auth method of a provider other than github. */
async function otherProvidersMethod() {
  const { providerId } = await seedCatalogProvider(t.db, "Other OAuth");
  const id = newId("pam");
  await t.db
    .insertInto("provider_auth_methods")
    .values({
      id,
      provider_id: providerId,
      provider_version_id: null,
      key: "oauth",
      type: "oauth",
      name: "Other OAuth",
      description: null,
      input_schema: JSON.stringify({ type: "object" }),
      scopes: JSON.stringify([]),
      oauth: null,
    })
    .execute();
  return id;
}

describe("provider auth configs: create errors", () => {
  it("answers 404 for an unknown auth method or one of another provider, writing nothing", async () => {
    const before = await snapshot();
    const foreign = await otherProvidersMethod();
    for (const methodId of ["pam_00000000000000000000000000", foreign, "oauth"]) {
      const res = await t.fetch(collection(deploymentId), json("POST", body({ provider_auth_method_id: methodId })));
      expect(res.status, methodId).toBe(404);
      const error = (await res.json()) as ErrorBody;
      expect(error).toMatchObject({ code: "not_found", entity: "provider.auth_method", status: 404 });
      expect(error.message).toContain(methodId);
    }
    // A deployment of a provider without auth methods knows none of github's.
    const everything = await deploy(t.client, await catalogEverything(t.db), "Everything");
    const everythingCredentials = await createCredentials(t.client, everything.id);
    const res = await t.fetch(
      collection(everything.id),
      json("POST", {
        name: "x",
        provider_auth_method_id: github.oauthMethodId,
        credentials: { type: "reference", provider_auth_credentials_id: everythingCredentials.id },
      }),
    );
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", entity: "provider.auth_method" });
    expect(await snapshot()).toEqual(before);
  });

  it("answers 404 for unknown credentials and for credentials of another deployment", async () => {
    const before = await snapshot();
    const other = await deploy(t.client, github.providerId, "Another of mine");
    const othersCredentials = await createCredentials(t.client, other.id);
    for (const id of ["par_00000000000000000000000000", othersCredentials.id]) {
      const res = await t.fetch(
        collection(deploymentId),
        json("POST", body({ credentials: { type: "reference", provider_auth_credentials_id: id } })),
      );
      expect(res.status, id).toBe(404);
      const error = (await res.json()) as ErrorBody;
      expect(error).toMatchObject({ code: "not_found", entity: "provider.auth_credentials" });
      expect(error.message).toContain(id);
    }
    // The same credentials work under their own deployment.
    await createAuthConfig(t.client, other.id, github.oauthMethodId, othersCredentials.id);
    const after = await snapshot();
    expect(after.filter((r) => r.provider_deployment_id === deploymentId)).toEqual(
      before.filter((r) => r.provider_deployment_id === deploymentId),
    );
  });

  it("answers 400 at provider_auth_method_id for a token method", async () => {
    const before = await snapshot();
    const res = await t.fetch(
      collection(deploymentId),
      json("POST", body({ provider_auth_method_id: github.tokenMethodId })),
    );
    expect(res.status).toBe(400);
    const error = (await res.json()) as ErrorBody;
    expect(error).toMatchObject({ code: "invalid_data", entity: "body", status: 400, ok: false });
    expect(error.errors).toEqual([expect.objectContaining({ path: ["provider_auth_method_id"] })]);
    expect(await snapshot()).toEqual(before);
  });

  it("rejects invalid bodies with field paths and writes nothing", async () => {
    const before = await snapshot();
    const cases: [unknown, (string | number)[][]][] = [
      [{}, [["name"], ["provider_auth_method_id"], ["credentials"]]],
      [body({ name: "" }), [["name"]]],
      [body({ provider_auth_method_id: "" }), [["provider_auth_method_id"]]],
      [body({ credentials: undefined }), [["credentials"]]],
      [
        body({ credentials: { type: "inline", provider_auth_credentials_id: credentialsId } }),
        [["credentials", "type"]],
      ],
      [body({ credentials: { type: "reference" } }), [["credentials", "provider_auth_credentials_id"]]],
      [body({ credentials: credentialsId }), [["credentials"]]],
      [
        body({ credentials: { type: "reference", provider_auth_credentials_id: credentialsId, clientSecret: "s" } }),
        [["credentials", "clientSecret"]],
      ],
      [body({ type: "oauth_automated" }), [["type"]]],
      [body({ status: "active" }), [["status"]]],
      [body({ metadata: [1] }), [["metadata"]]],
    ];
    for (const [b, paths] of cases) {
      const res = await t.fetch(collection(deploymentId), json("POST", b));
      const label = JSON.stringify(b);
      expect(res.status, label).toBe(400);
      const error = (await res.json()) as ErrorBody;
      expect(error, label).toMatchObject({ code: "invalid_data", entity: "body" });
      for (const p of paths)
        expect(
          error.errors?.map((e) => e.path),
          label,
        ).toContainEqual(p);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe("provider auth configs: other errors", () => {
  it("rejects update bodies that would change the connection, changing nothing", async () => {
    const config = await createAuthConfig(t.client, deploymentId, github.oauthMethodId, credentialsId);
    const before = await snapshot();
    const cases: [unknown, (string | number)[]][] = [
      [{ provider_auth_method_id: github.tokenMethodId }, ["provider_auth_method_id"]],
      [{ credentials: { type: "reference", provider_auth_credentials_id: credentialsId } }, ["credentials"]],
      [{ status: "active" }, ["status"]],
      [{ type: "manual" }, ["type"]],
      [{ name: "" }, ["name"]],
      [{ description: 1 }, ["description"]],
      [{ metadata: "m" }, ["metadata"]],
    ];
    for (const [b, p] of cases) {
      const res = await t.fetch(item(deploymentId, config.id), json("PATCH", b));
      expect(res.status, JSON.stringify(b)).toBe(400);
      const error = (await res.json()) as ErrorBody;
      expect(error).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(error.errors?.map((e) => e.path)).toContainEqual(p);
    }
    expect(await snapshot()).toEqual(before);
  });

  it("validates the list query", async () => {
    const tooMany = Array.from({ length: 101 }, (_, i) => `provider_auth_method_id=pam_${i}`).join("&");
    const cases: [string, string][] = [
      ["provider_auth_method_id=", "invalid_data"],
      ["provider_auth_credentials_id=", "invalid_data"],
      [`provider_auth_credentials_id=${"x".repeat(65)}`, "invalid_data"],
      [tooMany, "invalid_data"],
      ["id=pac_x", "invalid_data"],
      ["status=active", "invalid_data"],
      ["limit=abc", "invalid_data"],
      ["cursor=nope", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`${collection(deploymentId)}?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });

  it("answers 404 for an unknown deployment on every operation", async () => {
    const config = await createAuthConfig(t.client, deploymentId, github.oauthMethodId, credentialsId);
    const before = await snapshot();
    const requests: [string, RequestInit][] = [
      [collection(UNKNOWN_DEPLOYMENT), { method: "GET" }],
      [collection(UNKNOWN_DEPLOYMENT), json("POST", body())],
      [item(UNKNOWN_DEPLOYMENT, config.id), { method: "GET" }],
      [item(UNKNOWN_DEPLOYMENT, config.id), json("PATCH", { name: "x" })],
      [item(UNKNOWN_DEPLOYMENT, config.id), { method: "DELETE" }],
    ];
    for (const [p, init] of requests) {
      const res = await t.fetch(p, init);
      expect(res.status, `${init.method} ${p}`).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found", entity: "provider.deployment" });
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers 404 for unknown auth configs and for those of another deployment, changing nothing", async () => {
    const other = await deploy(t.client, github.providerId, "Another of mine");
    const theirs = await createAuthConfig(
      t.client,
      other.id,
      github.oauthMethodId,
      (await createCredentials(t.client, other.id)).id,
    );
    const before = await snapshot();
    for (const id of [UNKNOWN_CONFIG, theirs.id]) {
      for (const init of [{ method: "GET" }, json("PATCH", { name: "Moved" }), { method: "DELETE" }]) {
        const res = await t.fetch(item(deploymentId, id), init);
        expect(res.status, `${init.method} ${id}`).toBe(404);
        const error = (await res.json()) as ErrorBody;
        expect(error).toMatchObject({ code: "not_found", entity: "provider.auth_config" });
        expect(error.message).toContain(id);
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers malformed JSON, wrong content types and wrong methods", async () => {
    const before = await snapshot();
    const bad = await t.fetch(collection(deploymentId), json("POST", "{"));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "bad_request" });
    const form = await t.fetch(collection(deploymentId), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "name=x",
    });
    expect(form.status).toBe(415);
    const put = await t.fetch(item(deploymentId, UNKNOWN_CONFIG), json("PUT", {}));
    expect(put.status).toBe(405);
    expect(await put.json()).toMatchObject({ code: "method_not_allowed" });
    expect(await snapshot()).toEqual(before);
  });
});

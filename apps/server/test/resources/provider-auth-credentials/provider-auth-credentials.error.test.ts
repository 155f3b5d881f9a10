import { type ErrorBody, unwrap } from "@toolplane/client";
import { beforeAll, describe, expect, it } from "vitest";
import { catalogGithub, createCredentials, secret } from "../../support/auth-fixtures.ts";
import { countRows } from "../../support/catalog-fixtures.ts";
import { deploy, underDeployment } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { expectBadBodiesRefused, json } from "../../support/security.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));
let deploymentId: string;
beforeAll(async () => {
  deploymentId = (await deploy(t.client, github.providerId)).id;
});

const UNKNOWN_DEPLOYMENT = "pde_00000000000000000000000000";
const UNKNOWN_CREDENTIALS = "par_00000000000000000000000000";
const { collection, item } = underDeployment("auth-credentials");

const snapshot = () => t.db.selectFrom("provider_auth_credentials").selectAll().orderBy("id").execute();

describe("provider auth credentials: invalid bodies", () => {
  it("rejects invalid create bodies with field paths, never echoing the secret, and writes nothing", async () => {
    const clientSecret = secret("client-secret");
    const before = await snapshot();
    const cases: [string, unknown, { path: (string | number)[]; code?: string }[]][] = [
      [
        "empty",
        {},
        [
          { path: ["name"], code: "required" },
          { path: ["config"], code: "required" },
        ],
      ],
      ["no config", { name: "x" }, [{ path: ["config"], code: "required" }]],
      [
        "no secret",
        { name: "x", config: { type: "oauth", clientId: "c" } },
        [{ path: ["config", "clientSecret"], code: "required" }],
      ],
      [
        "no client id",
        { name: "x", config: { type: "oauth", clientSecret } },
        [{ path: ["config", "clientId"], code: "required" }],
      ],
      [
        "empty secret",
        { name: "x", config: { type: "oauth", clientId: "c", clientSecret: "" } },
        [{ path: ["config", "clientSecret"] }],
      ],
      [
        "oversized secret",
        { name: "x", config: { type: "oauth", clientId: "c", clientSecret: `${clientSecret}${"s".repeat(4100)}` } },
        [{ path: ["config", "clientSecret"] }],
      ],
      [
        "secret of the wrong type",
        { name: "x", config: { type: "oauth", clientId: "c", clientSecret: [clientSecret] } },
        [{ path: ["config", "clientSecret"], code: "type" }],
      ],
      [
        "snake_case members",
        { name: "x", config: { type: "oauth", client_id: "c", client_secret: clientSecret } },
        [
          { path: ["config", "client_secret"], code: "additional_property" },
          { path: ["config", "clientId"], code: "required" },
        ],
      ],
      [
        "scopes not strings",
        { name: "x", config: { type: "oauth", clientId: "c", clientSecret, scopes: "repo" } },
        [{ path: ["config", "scopes"], code: "type" }],
      ],
      [
        "empty scope",
        { name: "x", config: { type: "oauth", clientId: "c", clientSecret, scopes: ["repo", ""] } },
        [{ path: ["config", "scopes", 1] }],
      ],
      ["empty name", { name: "", config: { type: "oauth", clientId: "c", clientSecret } }, [{ path: ["name"] }]],
      [
        "unknown member",
        { name: "x", client_secret: clientSecret, config: { type: "oauth", clientId: "c", clientSecret } },
        [{ path: ["client_secret"], code: "additional_property" }],
      ],
      [
        "metadata not an object",
        { name: "x", metadata: clientSecret, config: { type: "oauth", clientId: "c", clientSecret } },
        [{ path: ["metadata"], code: "type" }],
      ],
    ];
    for (const [label, body, expected] of cases) {
      const res = await t.fetch(collection(deploymentId), json("POST", body));
      expect(res.status, label).toBe(400);
      const text = await res.text();
      expect(text, label).not.toContain(clientSecret);
      const error = JSON.parse(text) as ErrorBody;
      expect(error, label).toMatchObject({ code: "invalid_data", entity: "body", status: 400, ok: false });
      expect(error.errors, label).toEqual(expect.arrayContaining(expected.map((e) => expect.objectContaining(e))));
    }
    // A config type that is not oauth is refused at config.type.
    const basic = await t.fetch(
      collection(deploymentId),
      json("POST", { name: "x", config: { type: "basic", clientId: "c", clientSecret } }),
    );
    expect(basic.status).toBe(400);
    const basicText = await basic.text();
    expect(basicText).not.toContain(clientSecret);
    expect(JSON.parse(basicText)).toMatchObject({ code: "invalid_data", entity: "body" });
    expect((JSON.parse(basicText) as ErrorBody).errors?.some((e) => e.path[0] === "config")).toBe(true);

    expect(await snapshot()).toEqual(before);
  });

  it("answers malformed JSON, a wrong content type and oversized bodies without writing", async () => {
    const before = await countRows(t.db, "provider_auth_credentials");
    await expectBadBodiesRefused(t, collection(deploymentId), {
      name: "x",
      config: { type: "oauth", clientId: "c", clientSecret: "s".repeat(70 * 1024) },
    });
    expect(await countRows(t.db, "provider_auth_credentials")).toBe(before);
  });

  it("rejects update bodies that try to change the registration or are invalid, changing nothing", async () => {
    const created = await createCredentials(t.client, deploymentId, { name: "Fixed" });
    const before = await snapshot();
    const clientSecret = secret("new-secret");
    const cases: [unknown, (string | number)[]][] = [
      [{ config: { type: "oauth", clientId: "c2", clientSecret } }, ["config"]],
      [{ client_id: "c2" }, ["client_id"]],
      [{ clientSecret }, ["clientSecret"]],
      [{ name: "" }, ["name"]],
      [{ name: 5 }, ["name"]],
      [{ description: "d".repeat(10_001) }, ["description"]],
      [{ metadata: "x" }, ["metadata"]],
    ];
    for (const [body, p] of cases) {
      const res = await t.fetch(item(deploymentId, created.id), json("PATCH", body));
      expect(res.status, JSON.stringify(p)).toBe(400);
      const text = await res.text();
      expect(text).not.toContain(clientSecret);
      const error = JSON.parse(text) as ErrorBody;
      expect(error).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(error.errors?.map((e) => e.path)).toContainEqual(p);
    }
    expect(await snapshot()).toEqual(before);
  });

  it("validates the list query", async () => {
    const tooMany = Array.from({ length: 101 }, (_, i) => `id=par_${i}`).join("&");
    const cases: [string, string][] = [
      ["id=", "invalid_data"],
      [`id=${"x".repeat(65)}`, "invalid_data"],
      [tooMany, "invalid_data"],
      ["ids=par_x", "invalid_data"],
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["order=up", "invalid_data"],
      ["cursor=garbage", "bad_request"],
      ["after=par_a&before=par_b", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`${collection(deploymentId)}?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });
});

describe("provider auth credentials: not found", () => {
  it("answers 404 for an unknown deployment on every operation", async () => {
    const body = { name: "x", config: { type: "oauth", clientId: "c", clientSecret: "s" } };
    const before = await countRows(t.db, "provider_auth_credentials");
    const existing = await createCredentials(t.client, deploymentId);
    const requests: [string, RequestInit][] = [
      [collection(UNKNOWN_DEPLOYMENT), { method: "GET" }],
      [collection(UNKNOWN_DEPLOYMENT), json("POST", body)],
      [item(UNKNOWN_DEPLOYMENT, existing.id), { method: "GET" }],
      [item(UNKNOWN_DEPLOYMENT, existing.id), json("PATCH", { name: "x" })],
      [item(UNKNOWN_DEPLOYMENT, existing.id), { method: "DELETE" }],
    ];
    for (const [p, init] of requests) {
      const res = await t.fetch(p, init);
      expect(res.status, `${init.method} ${p}`).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found", entity: "provider.deployment" });
    }
    expect(await countRows(t.db, "provider_auth_credentials")).toBe(before + 1);
    expect(
      await unwrap(
        t.client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}", {
          params: { path: { provider_deployment_id: deploymentId, provider_auth_credentials_id: existing.id } },
        }),
      ),
    ).toEqual(existing);
  });

  it("answers 404 for unknown credentials, and for credentials of another deployment, changing nothing", async () => {
    const other = await deploy(t.client, github.providerId, "Another of mine");
    const theirs = await createCredentials(t.client, other.id, { name: "Other deployment's" });
    const before = await snapshot();
    for (const id of [UNKNOWN_CREDENTIALS, theirs.id, "not-an-id"]) {
      for (const init of [{ method: "GET" }, json("PATCH", { name: "Moved" }), { method: "DELETE" }]) {
        const res = await t.fetch(item(deploymentId, id), init);
        expect(res.status, `${init.method} ${id}`).toBe(404);
        const error = (await res.json()) as ErrorBody;
        expect(error).toMatchObject({ code: "not_found", entity: "provider.auth_credentials" });
        expect(error.message).toContain(id);
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers 405 for methods the routes do not have", async () => {
    const created = await createCredentials(t.client, deploymentId);
    const put = await t.fetch(item(deploymentId, created.id), json("PUT", { name: "x" }));
    expect(put.status).toBe(405);
    expect(await put.json()).toMatchObject({ code: "method_not_allowed" });
    const del = await t.fetch(collection(deploymentId), { method: "DELETE" });
    expect(del.status).toBe(405);
    expect(del.headers.get("allow")).toBe("GET, POST");
  });
});

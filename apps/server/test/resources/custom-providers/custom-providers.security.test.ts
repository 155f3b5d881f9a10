import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { passwordAad } from "../../../src/custom-providers/source.ts";
import { SecretBox } from "../../../src/secrets/secret-box.ts";
import { createRemote, environments, firstVersion } from "../../custom-providers/support.ts";
import { dumpAllTables } from "../../support/catalog-fixtures.ts";
import { type StartedTestServer, startTestServer, type Tenant } from "../../support/server.ts";

let t: StartedTestServer;
let other: Tenant;
beforeAll(async () => {
  t = await startTestServer();
  other = await t.createTenant("other");
});
afterAll(() => t.close());

const REMOTE = { type: "remote" as const, remote_url: "http://127.0.0.1:9/mcp" };

describe("custom provider security", () => {
  it("401s every operation without a valid API key", async () => {
    const paths: [string, string][] = [
      ["GET", "/custom-providers"],
      ["POST", "/custom-providers"],
      ["GET", "/custom-providers/cpr_x"],
      ["PATCH", "/custom-providers/cpr_x"],
      ["GET", "/custom-providers/cpr_x/versions"],
      ["POST", "/custom-providers/cpr_x/versions"],
      ["GET", "/custom-providers/cpr_x/versions/cpv_x"],
      ["GET", "/custom-providers/cpr_x/commits"],
      ["POST", "/custom-providers/cpr_x/commits"],
      ["GET", "/custom-providers/cpr_x/commits/cpc_x"],
    ];
    for (const [method, path] of paths) {
      const res = await t.fetch(path, {
        method,
        auth: false,
        headers: { "content-type": "application/json", authorization: "Bearer tp_wrong_key" },
        body: method === "GET" ? undefined : "{}",
      });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it("404s another tenant's custom provider, versions, commits and environments", async () => {
    const mine = await createRemote(t, REMOTE.remote_url, "Mine");
    const theirs = unwrap(other.client.POST("/custom-providers", { body: { name: "Theirs", from: REMOTE } }));
    const their = await theirs;
    const theirVersion = (
      await unwrap(
        other.client.GET("/custom-providers/{custom_provider_id}/versions", {
          params: { path: { custom_provider_id: their.id } },
        }),
      )
    ).items[0];
    const theirCommit = (
      await unwrap(
        other.client.GET("/custom-providers/{custom_provider_id}/commits", {
          params: { path: { custom_provider_id: their.id } },
        }),
      )
    ).items[0];
    if (!theirVersion || !theirCommit) throw new Error("seed failed");

    const theirPath = { custom_provider_id: their.id };
    const status = async (p: Promise<{ response: Response }>) => (await p).response.status;
    expect(await status(t.client.GET("/custom-providers/{custom_provider_id}", { params: { path: theirPath } }))).toBe(
      404,
    );
    expect(
      await status(
        t.client.PATCH("/custom-providers/{custom_provider_id}", { params: { path: theirPath }, body: { name: "x" } }),
      ),
    ).toBe(404);
    expect(
      await status(t.client.GET("/custom-providers/{custom_provider_id}/versions", { params: { path: theirPath } })),
    ).toBe(404);
    expect(
      await status(
        t.client.POST("/custom-providers/{custom_provider_id}/versions", {
          params: { path: theirPath },
          body: { from: REMOTE },
        }),
      ),
    ).toBe(404);
    expect(
      await status(t.client.GET("/custom-providers/{custom_provider_id}/commits", { params: { path: theirPath } })),
    ).toBe(404);
    // Their version and commit ids under my own custom provider.
    expect(
      await status(
        t.client.GET("/custom-providers/{custom_provider_id}/versions/{custom_provider_version_id}", {
          params: { path: { custom_provider_id: mine.id, custom_provider_version_id: theirVersion.id } },
        }),
      ),
    ).toBe(404);
    expect(
      await status(
        t.client.GET("/custom-providers/{custom_provider_id}/commits/{custom_provider_commit_id}", {
          params: { path: { custom_provider_id: mine.id, custom_provider_commit_id: theirCommit.id } },
        }),
      ),
    ).toBe(404);
    const theirEnvs = await environments({ ...t, client: other.client }, their.id);
    const myEnvs = await environments(t, mine.id);
    expect(
      await status(
        t.client.POST("/custom-providers/{custom_provider_id}/commits", {
          params: { path: { custom_provider_id: mine.id } },
          body: {
            message: "steal",
            action: {
              type: "merge_version_into_environment",
              from_environment_id: theirEnvs.development,
              to_environment_id: myEnvs.production,
            },
          },
        }),
      ),
    ).toBe(404);
    const list = await unwrap(t.client.GET("/custom-providers", { params: { query: { ids: [their.id, mine.id] } } }));
    expect(list.items.map((i) => i.id)).toEqual([mine.id]);
    // Their provider is not deployable by me either.
    expect(
      await status(t.client.POST("/provider-deployments", { body: { name: "x", provider_id: their.provider.id } })),
    ).toBe(404);
  });

  it("never returns the container password and stores it only encrypted", async () => {
    const password = `ghp_${"s3cr3t".repeat(4)}_${Date.now()}`;
    const res = await t.fetch("/custom-providers", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "Private image",
        from: { type: "container", image_ref: "ghcr.io/acme/private:1", username: "bot", password },
      }),
    });
    expect(res.status).toBe(201);
    const text = await res.text();
    expect(text).not.toContain(password);
    const cp = JSON.parse(text) as { id: string };
    const reads = [
      await t.fetch(`/custom-providers/${cp.id}`),
      await t.fetch(`/custom-providers/${cp.id}/versions`),
      await t.fetch(`/custom-providers/${cp.id}/commits`),
      await t.fetch("/custom-providers"),
    ];
    for (const r of reads) expect(await r.text()).not.toContain(password);

    const dump = JSON.stringify(await dumpAllTables(t.db));
    expect(dump).not.toContain(password);
    expect(dump).not.toContain(Buffer.from(password).toString("base64"));
    const v1 = await firstVersion(t, cp.id);
    const row = await t.db
      .selectFrom("custom_provider_versions")
      .select("password_ciphertext")
      .where("id", "=", v1.id)
      .executeTakeFirstOrThrow();
    expect(new SecretBox([t.secretKey]).decrypt(row.password_ciphertext ?? "", passwordAad(v1.id))).toBe(password);
  });
});

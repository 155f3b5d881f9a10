import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRemote } from "../../custom-providers/support.ts";
import { type StartedTestServer, startTestServer, type Tenant } from "../../support/server.ts";

let t: StartedTestServer;
let other: Tenant;
beforeAll(async () => {
  t = await startTestServer();
  other = await t.createTenant("other");
});
afterAll(() => t.close());

const URL_ = "http://127.0.0.1:9/mcp";
const createVersion = (cpId: string, body: Record<string, unknown>, client = t.client) =>
  client.POST("/custom-providers/{custom_provider_id}/versions", {
    params: { path: { custom_provider_id: cpId } },
    body: body as never,
  });

describe("custom provider version errors", () => {
  it("400s a from.type other than the custom provider's", async () => {
    const cp = await createRemote(t, URL_, "Typed");
    const res = await createVersion(cp.id, {
      from: { type: "function", runtime: "node20", files: [{ path: "index.mjs", content: "" }] },
    });
    expect(res.response.status).toBe(400);
    expect(res.error?.errors?.[0]?.path).toEqual(["from", "type"]);
  });

  it("400s a missing from and a bad transformer", async () => {
    const cp = await createRemote(t, URL_, "Validated");
    expect((await createVersion(cp.id, {})).response.status).toBe(400);
    const res = await createVersion(cp.id, {
      from: { type: "remote", remote_url: URL_ },
      config: { schema: {}, transformer: '{"env":{"1X":"a"}}' },
    });
    expect(res.response.status).toBe(400);
    expect(res.error?.errors?.[0]?.path.slice(0, 3)).toEqual(["config", "transformer", "env"]);
  });

  it("404s unknown and another tenant's custom providers and versions", async () => {
    const mine = await createRemote(t, URL_, "Mine");
    const theirs = await createRemote({ ...t, client: other.client }, URL_, "Theirs");
    expect((await createVersion("cpr_unknown", { from: { type: "remote", remote_url: URL_ } })).response.status).toBe(
      404,
    );
    expect((await createVersion(theirs.id, { from: { type: "remote", remote_url: URL_ } })).response.status).toBe(404);
    const get = await t.client.GET("/custom-providers/{custom_provider_id}/versions/{custom_provider_version_id}", {
      params: { path: { custom_provider_id: mine.id, custom_provider_version_id: "cpv_unknown" } },
    });
    expect(get.response.status).toBe(404);
    expect(get.error?.entity).toBe("custom_provider.version");
  });

  it("409s a new version of an archived custom provider", async () => {
    const cp = await createRemote(t, URL_, "Archived");
    await t.client.PATCH("/custom-providers/{custom_provider_id}", {
      params: { path: { custom_provider_id: cp.id } },
      body: { status: "archived" },
    });
    const res = await createVersion(cp.id, { from: { type: "remote", remote_url: URL_ } });
    expect(res.response.status).toBe(409);
    expect(res.error?.code).toBe("conflict");
  });
});

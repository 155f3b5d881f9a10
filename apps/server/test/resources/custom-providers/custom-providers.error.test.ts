import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StartedTestServer, startTestServer } from "../../support/server.ts";

let t: StartedTestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

const REMOTE = { type: "remote", remote_url: "http://127.0.0.1:9/mcp" };
const create = (body: Record<string, unknown>) => t.client.POST("/custom-providers", { body: body as never });

async function expect400(body: Record<string, unknown>, path: (string | number)[]) {
  const res = await create(body);
  expect(res.response.status).toBe(400);
  expect(res.error).toMatchObject({ code: "invalid_data" });
  expect(res.error?.errors?.map((e) => e.path)).toContainEqual(path);
}

describe("custom provider errors", () => {
  it("400s bodies the schema rejects", async () => {
    await expect400({ from: REMOTE }, ["name"]);
    await expect400({ name: "x" }, ["from"]);
    await expect400({ name: "x", from: { type: "remote", remote_url: "ftp://example.com/mcp" } }, [
      "from",
      "remote_url",
    ]);
    await expect400({ name: "x", from: { ...REMOTE, protocol: "websocket" } }, ["from", "protocol"]);
    await expect400({ name: "x", from: { type: "container" } }, ["from", "image_ref"]);
    await expect400(
      { name: "x", from: { type: "function", runtime: "node20", files: [{ path: "../evil.mjs", content: "" }] } },
      ["from", "files", 0, "path"],
    );
  });

  it("400s a transformer that is not JSON or not of the transformer's form, with paths into it", async () => {
    await expect400({ name: "x", from: REMOTE, config: { schema: {}, transformer: "{headers:" } }, [
      "config",
      "transformer",
    ]);
    await expect400(
      { name: "x", from: REMOTE, config: { schema: {}, transformer: '{"headers":{"A":"{{ process.env.SECRET }}"}}' } },
      ["config", "transformer", "headers", "A"],
    );
    await expect400({ name: "x", from: REMOTE, config: { schema: {}, transformer: '{"run":"rm -rf /"}' } }, [
      "config",
      "transformer",
      "run",
    ]);
  });

  it("400s a config schema that is not a JSON Schema", async () => {
    await expect400({ name: "x", from: REMOTE, config: { schema: { type: "not-a-type" } } }, ["config", "schema"]);
  });

  it("400s function files whose entrypoint is missing or whose paths repeat", async () => {
    const fn = (files: { path: string; content: string }[], entrypoint?: string) => ({
      name: "fn",
      from: { type: "function", runtime: "node20", files, ...(entrypoint ? { entrypoint } : {}) },
    });
    await expect400(fn([{ path: "main.mjs", content: "" }]), ["from", "entrypoint"]);
    await expect400(fn([{ path: "index.mjs", content: "" }], "other.mjs"), ["from", "entrypoint"]);
    await expect400(
      fn([
        { path: "index.mjs", content: "" },
        { path: "index.mjs", content: "again" },
      ]),
      ["from", "files", 1, "path"],
    );
  });

  it("400s unknown list filter values", async () => {
    const res = await t.fetch("/custom-providers?status=deleted");
    expect(res.status).toBe(400);
    expect((await t.fetch("/custom-providers?type=lambda")).status).toBe(400);
  });

  it("404s unknown ids on get and update", async () => {
    const get = await t.client.GET("/custom-providers/{custom_provider_id}", {
      params: { path: { custom_provider_id: "cpr_unknown" } },
    });
    expect(get.response.status).toBe(404);
    expect(get.error).toMatchObject({ code: "not_found", entity: "custom_provider" });
    const patch = await t.client.PATCH("/custom-providers/{custom_provider_id}", {
      params: { path: { custom_provider_id: "cpr_unknown" } },
      body: { name: "x" },
    });
    expect(patch.response.status).toBe(404);
  });

  it("leaves nothing behind when a create is refused", async () => {
    const before = await t.db.selectFrom("providers").select("id").execute();
    await create({ name: "Half", from: REMOTE, config: { schema: { type: "not-a-type" } } });
    const after = await t.db.selectFrom("providers").select("id").execute();
    expect(after.length).toBe(before.length);
  });
});

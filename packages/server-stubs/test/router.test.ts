import { once } from "node:events";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError, createApiRouter, type Handlers } from "../src/index.ts";
import { spec } from "./spec.ts";

// Every handler echoes the validated input it received, so the router's parsing is observable.
const echo = new Proxy({}, { get: (_t, operationId) => async (input: unknown) => ({ operationId, input }) }) as Record<
  string,
  unknown
>;
const handlers = new Proxy({}, { get: () => echo }) as Handlers<{ ok: true }>;

let base = "";
let close: () => void;
beforeAll(async () => {
  const app = express();
  app.use(
    createApiRouter({
      spec: spec,
      handlers,
      bodyLimitBytes: 1024,
      context: async (req) => {
        if (req.headers.authorization !== "Bearer ok") throw new ApiError("unauthorized", "no");
        return { ok: true as const };
      },
    }),
  );
  app.use((err: ApiError, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res
      .set(err.headers ?? {})
      .status(err.status)
      .json(err.toBody());
  });
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => server.close();
});
afterAll(() => close());

const get = async (path: string) => {
  const res = await fetch(`${base}${path}`, { headers: { authorization: "Bearer ok" } });
  return {
    status: res.status,
    body: (await res.json()) as { operationId: string; input: { query: Record<string, unknown> } },
  };
};

describe("router: query normalisation", () => {
  it("accepts every Union form and yields arrays", async () => {
    for (const q of [
      "provider_id=pro_a&provider_id=pro_b",
      "provider_id[]=pro_a&provider_id[]=pro_b",
      "provider_id[0]=pro_a&provider_id[1]=pro_b",
      "provider_id[1]=pro_b&provider_id[0]=pro_a",
    ]) {
      const { status, body } = await get(`/provider-deployments?${q}`);
      expect(status, q).toBe(200);
      expect(body.input.query.provider_id, q).toEqual(["pro_a", "pro_b"]);
    }
    const single = await get("/provider-deployments?provider_id=pro_a");
    expect(single.body.input.query.provider_id).toEqual(["pro_a"]);
  });

  it("coerces and defaults scalar parameters", async () => {
    const { body } = await get("/provider-groups?limit=7");
    expect(body.input.query).toEqual({ limit: 7, order: "asc" });
    expect((await get("/provider-groups")).body.input.query).toEqual({ limit: 20, order: "asc" });
  });

  it("rejects unknown and repeated scalar parameters with field paths", async () => {
    const unknown = await get("/provider-groups?nope=1");
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: "invalid_data", entity: "query", errors: [{ path: ["nope"] }] });
    const repeated = await get("/provider-groups?limit=1&limit=2");
    expect(repeated.body).toMatchObject({
      code: "invalid_data",
      errors: [{ code: "multiple_values", path: ["limit"] }],
    });
  });
});

describe("router: binding", () => {
  it("routes literal segments before parameters (imports/schema before imports/{id})", async () => {
    const base = "/provider-deployments/pde_1/auth-configs/pac_1/imports";
    expect((await get(`${base}/schema`)).body.operationId).toBe("getProviderAuthImportSchema");
    expect((await get(`${base}/paci_1`)).body.operationId).toBe("getProviderAuthImport");
  });

  it("authenticates before validating", async () => {
    const res = await fetch(`${base}/provider-groups?limit=abc`);
    expect(res.status).toBe(401);
  });

  it("answers 405 with Allow for a known path and an unbound method", async () => {
    const res = await fetch(`${base}/portals/ptl_1`, { method: "PUT", headers: { authorization: "Bearer ok" } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, PATCH, DELETE");
  });

  it("binds every operation of the spec", async () => {
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const method of ["get", "post", "patch", "delete"] as const) {
        const op = item[method];
        if (!op || method !== "get") continue;
        const url = path.replace(/\{[^}]+\}/g, "x_1");
        const { body } = await get(url);
        expect(body.operationId, `${method} ${path}`).toBe(op.operationId);
      }
    }
  });
});

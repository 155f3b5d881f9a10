import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type StartedTestServer, startTestServer } from "../support/server.ts";

interface LogLine {
  level: number;
  msg: string;
  req?: { id: string; method: string; url: string };
  res?: { statusCode: number };
  responseTime?: number;
}

describe("request log", () => {
  let t: StartedTestServer;
  beforeAll(async () => {
    t = await startTestServer({ logLevel: "info" });
  });
  afterAll(() => t.close());

  const lines = () =>
    t
      .logs()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LogLine);
  // The line is written when the response closes, which can be just after the client has read it.
  const linesFor = (id: string, count = 1) =>
    vi.waitFor(() => {
      const mine = lines().filter((line) => line.req?.id === id);
      expect(mine.filter((line) => line.msg === "request completed")).toHaveLength(count);
      return mine;
    });

  it("writes one line per request with the echoed request id, method, URL, status and time", async () => {
    const res = await t.fetch("/provider-deployments?limit=5");
    expect(res.status).toBe(200);
    const id = res.headers.get("x-request-id") ?? "";
    expect(id).toMatch(/^req_/);
    const [line, ...others] = await linesFor(id);
    expect(others).toEqual([]);
    expect(line).toMatchObject({
      level: 30,
      req: { id, method: "GET", url: "/provider-deployments?limit=5" },
      res: { statusCode: 200 },
    });
    expect(line?.responseTime).toBeTypeOf("number");
  });

  it("keeps a sane X-Request-Id and replaces one that is not", async () => {
    const kept = await t.fetch("/health", { headers: { "x-request-id": "client-42.a:b" } });
    expect(kept.headers.get("x-request-id")).toBe("client-42.a:b");
    await linesFor("client-42.a:b");
    const replaced = await t.fetch("/health", { headers: { "x-request-id": "no spaces <allowed>" } });
    expect(replaced.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("ties an error's line to the request, and logs neither the API key nor OAuth codes", async () => {
    const res = await t.fetch("/provider-deployments/pde_00000000000000000000000000?code=s3cret-code&x=1");
    // The operation takes no query parameters: a 400, logged through the request's logger before the summary line.
    expect(res.status).toBe(400);
    const id = res.headers.get("x-request-id") ?? "";
    const mine = await linesFor(id);
    expect(mine).toHaveLength(2);
    for (const line of mine) {
      expect(line.req).toEqual({
        id,
        method: "GET",
        url: "/provider-deployments/pde_00000000000000000000000000?code=[redacted]&x=1",
      });
    }
    const logs = t.logs();
    // The key's secret part: everything after `tp_<prefix>_` (it may itself contain `_`).
    const secret = t.tenant.apiKey.slice(t.tenant.apiKey.indexOf("_", 3) + 1);
    expect(secret.length).toBeGreaterThan(30);
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain("s3cret-code");
    expect(logs.toLowerCase()).not.toContain("authorization");
  });
});

// The runner must fail when the server breaks the contract. A tiny Express app plays a broken server, Prism is put
// in front of it by the runner's own startPrism, and the runner's own Recorder checks the answers.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrismProxy, startPrism } from "../src/prism.ts";
import { Recorder } from "../src/recorder.ts";
import { connectToServer, TWO_TENANTS_NEEDED } from "../src/remote.ts";
import { runContractTests } from "../src/run.ts";
import { bundledSpecPath, listOperations, readSpec } from "../src/spec.ts";
import { defineSuite } from "../src/suite/index.ts";
import { ResponseValidator } from "../src/validator.ts";

const spec = readSpec();
const operations = listOperations(spec);
const emptyList = {
  items: [],
  pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
};

let upstream: Server;
let prism: PrismProxy;

beforeAll(async () => {
  const app = express();
  app.use((_req, res, next) => {
    res.setHeader("X-Request-Id", "req_self_test");
    next();
  });
  // Breaks the list schema: `items` must be an array.
  app.get("/provider-groups", (_req, res) => {
    res.json({ items: "nope", pagination: emptyList.pagination });
  });
  // An undocumented status with a well-formed error body: Prism lets it through with only a Warning.
  app.get("/portals", (_req, res) => {
    res.status(418).json({ __typename: "error", ok: false, status: 418, code: "bad_request", message: "teapot" });
  });
  // A correct answer: no false alarm.
  app.get("/sessions", (_req, res) => {
    res.json(emptyList);
  });
  // What not-implemented operations answer: Prism swaps it for a mock, which the recorder must notice.
  app.get("/servers/:id", (_req, res) => {
    res.status(501).json({ __typename: "error", ok: false, status: 501, code: "not_implemented", message: "no" });
  });
  upstream = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => upstream.once("listening", () => resolve()));
  const address = upstream.address();
  const port = typeof address === "object" && address ? address.port : 0;
  prism = await startPrism({ specPath: bundledSpecPath, upstream: `http://127.0.0.1:${port}` });
}, 60_000);

afterAll(async () => {
  await prism?.stop();
  upstream?.closeAllConnections();
  await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
});

function recorder() {
  const r = new Recorder(operations, new ResponseValidator(spec, operations));
  r.proxyOrigin = new URL(prism.url).origin;
  return r;
}

describe("the contract runner", () => {
  it("fails a response whose body breaks the schema (Prism's sl-violations error)", async () => {
    const r = recorder();
    await r.check("listProviderGroups", 200, r.fetch(`${prism.url}/provider-groups`, { headers: auth }));
    const [check] = r.checks;
    expect(check?.ok).toBe(false);
    expect(check?.problems.join("\n")).toMatch(/sl-violations Error/);
    expect(check?.problems.join("\n")).toMatch(/items/);
    expect(r.observations[0]?.violations.length).toBeGreaterThan(0);
  });

  it("fails an undocumented status, which Prism only reports as a Warning", async () => {
    const r = recorder();
    await r.check("listPortals", 418, r.fetch(`${prism.url}/portals`, { headers: auth }));
    const [check] = r.checks;
    expect(check?.actual).toBe(418);
    expect(check?.ok).toBe(false);
    expect(check?.problems.join("\n")).toMatch(/sl-violations Warning/);
    expect(r.observations[0]?.violations.map((v) => v.severity)).toContain("Warning");
  });

  it("counts violations of responses nobody checked", async () => {
    const r = recorder();
    await r.fetch(`${prism.url}/provider-groups`, { headers: auth });
    expect(r.uncheckedProblems()).toHaveLength(1);
  });

  it("notices when Prism answers with a mock instead of forwarding the server's 501", async () => {
    const r = recorder();
    await r.check("getServer", 501, r.fetch(`${prism.url}/servers/srv_01jqz7m3c8v4r2k9x5n6t0w1yh`, { headers: auth }));
    const [check] = r.checks;
    expect(check?.ok).toBe(false);
    expect(check?.problems.join("\n")).toMatch(/Prism's mock/);
  });

  it("passes a correct response", async () => {
    const r = recorder();
    await r.check("listSessions", 200, r.fetch(`${prism.url}/sessions`, { headers: auth }));
    expect(r.checks[0]).toMatchObject({ ok: true, actual: 200, problems: [] });
  });
});

const auth = { authorization: "Bearer tp_aaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" };

describe("the in-process 2020-12 response validator", () => {
  const validator = new ResponseValidator(spec, operations);

  it("accepts the documented example and rejects a body that breaks the schema", () => {
    expect(validator.validate("listProviderGroups", 200, emptyList)).toEqual([]);
    expect(validator.validate("listProviderGroups", 200, { items: "nope", pagination: emptyList.pagination })).toEqual([
      "/items must be array",
    ]);
  });

  it("checks error bodies and flags undocumented statuses", () => {
    const error = { __typename: "error", ok: false, status: 501, code: "not_implemented", message: "Not yet." };
    expect(validator.validate("listSessions", 501, error)).toEqual([]);
    expect(validator.validate("listSessions", 501, { ...error, code: "nope" }).join()).toMatch(/\/code/);
    expect(validator.validate("getServer", 400, error)).toEqual(["status 400 is not documented for getServer"]);
  });
});

describe("a run against a running server (--base-url)", () => {
  // Another implementation of the spec, already running: it lists groups, and answers everything else 501 —
  // creating a group too, although a suite claims that operation (a handler wired to notImplemented).
  let server: Server;
  let baseUrl: string;
  let dir: string;
  beforeAll(async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.setHeader("X-Request-Id", "req_remote");
      next();
    });
    app.get("/provider-groups", (_req, res) => {
      res.json(emptyList);
    });
    app.use((_req, res) => {
      res.status(501).json({ __typename: "error", ok: false, status: 501, code: "not_implemented", message: "no" });
    });
    server = app.listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    const address = server.address();
    baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/`;
    dir = mkdtempSync(join(tmpdir(), "contract-self-"));
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const groups = defineSuite({
    tag: "Provider groups",
    operations: ["listProviderGroups", "createProviderGroup"],
    async run(ctx) {
      await ctx.ok("listProviderGroups", 200, ctx.client.GET("/provider-groups"));
      await ctx.check("createProviderGroup", 201, ctx.client.POST("/provider-groups", { body: { name: "G" } }));
    },
  });

  it("reports an operation answering 501 as a gap even when a suite claims it, and writes JUnit XML", async () => {
    const reportPath = join(dir, "contract-report.json");
    const { report, failed, junitPath } = await runContractTests({
      suites: [groups],
      target: { baseUrl, apiKey: "tp_key_a", otherApiKey: "tp_key_b" },
      reportPath,
      log: () => {},
    });
    expect(report.operations.listProviderGroups).toMatchObject({ implemented: true, suite: true });
    // Through Prism the suite's POST got a mock (Prism remocks upstream 501s): still a gap, and a failure.
    expect(report.operations.createProviderGroup).toMatchObject({ implemented: false, suite: true });
    expect(report.failures.some((f) => f.operationId === "createProviderGroup")).toBe(true);
    expect(failed).toBeGreaterThan(0);
    // Every unclaimed operation was probed on the running server directly and answered the documented 501.
    const unclaimed = operations.filter(
      (op) => !["listProviderGroups", "createProviderGroup"].includes(op.operationId),
    );
    for (const op of unclaimed) expect(report.operations[op.operationId]?.implemented).toBe(false);
    expect(report.summary.implemented).toBe(1);
    expect(report.summary.notImplemented).toBe(operations.length - 1);
    expect(JSON.parse(readFileSync(reportPath, "utf8")).summary).toEqual(report.summary);

    expect(junitPath).toBe(join(dir, "contract-report.junit.xml"));
    const xml = readFileSync(join(dir, "contract-report.junit.xml"), "utf8");
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="contract" /);
    const attr = (name: string) => Number(new RegExp(`<testsuites [^>]*\\b${name}="(\\d+)"`).exec(xml)?.[1]);
    expect(attr("tests")).toBe(report.summary.checks + report.summary.notImplemented);
    expect(attr("failures")).toBe(report.summary.failed);
    expect(attr("skipped")).toBe(report.summary.notImplemented);
    expect(xml).toContain('<testsuite name="Provider groups"');
    expect(xml).toMatch(/<testcase classname="createProviderGroup" name="implemented">\s*<skipped message="gap: POST/);
    expect(xml).toMatch(/<testcase classname="createProviderGroup" name="[^"]*">\s*<failure message=/);
  }, 120_000);

  it("needs two tenants: two keys, or the database to create them in", async () => {
    await expect(connectToServer({ baseUrl, apiKey: "tp_key_a" })).rejects.toThrow(TWO_TENANTS_NEEDED);
  });
});

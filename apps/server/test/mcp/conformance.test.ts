/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, `server --suite all`), a client nobody here
 * wrote, run twice against the same upstream (our fixture, which passes every scenario): directly, and through a
 * one-provider session. A session is a faithful proxy when every scenario that passes directly passes through it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type ConformanceUpstream, startConformanceUpstream } from "../support/conformance-upstream.ts";
import { type McpTools, mcpTools, run } from "../support/mcp-tools.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { createSession, deploymentRef, deployProvider, endpointOf, remoteProvider } from "./gateway-fixtures.ts";

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  description: string;
  errorMessage?: string;
}

/**
 * A scenario's outcome: passed when none of its checks failed (the suite's own exit criterion). Its successful and
 * warned checks are kept too: a scenario can "pass" by skipping its checks (e.g. server-sse-polling when the answer
 * is JSON, not SSE) or with SHOULD-level warnings, which a transparent proxy must not add where the upstream had none.
 */
interface Outcome {
  passed: boolean;
  failures: Check[];
  succeeded: Set<string>;
  warned: Set<string>;
}

let tools: McpTools;
let t: StartedTestServer;
let upstream: ConformanceUpstream;
let sessionUrl: string;
const outputDirs: string[] = [];

beforeAll(async () => {
  // Links to its own port: the gateway accepts browser Origins of its public URL, and the dns-rebinding-protection
  // scenario sends the Origin of the URL it was given (with the port), as a browser on the public URL would.
  [tools, t, upstream] = await Promise.all([
    mcpTools(),
    startTestServer({ linksToOwnPort: true }),
    startConformanceUpstream(),
  ]);
  const provider = await remoteProvider(t.db, "conformance", upstream.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Conformance");
  const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  // The suite cannot send headers: the session secret goes in `?key=`, which every scenario keeps (they all use
  // the URL as given, for the SDK client and for their raw fetches alike).
  const url = endpointOf(t, session);
  url.searchParams.set("key", session.secret);
  sessionUrl = url.toString();
}, 600_000);

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([upstream?.close(), t?.close()]);
  for (const dir of outputDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the whole suite against a URL and reads the `checks.json` it writes per scenario (in
 * `server-<scenario>-<timestamp>/`). A scenario that threw has no file: the caller sees it missing.
 */
async function runSuite(url: string): Promise<Map<string, Outcome>> {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-conformance-"));
  outputDirs.push(dir);
  // The suite exits 1 when a scenario fails; the outcomes are in its files either way.
  const failedRun = await run(tools.node, [tools.conformance, "server", "--url", url, "--suite", "all", "-o", dir], {
    timeoutMs: 240_000,
  }).then(
    () => null,
    (error: Error) => error,
  );
  const outcomes = new Map<string, Outcome>();
  for (const entry of readdirSync(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (!scenario) continue;
    const checks = JSON.parse(readFileSync(join(dir, entry, "checks.json"), "utf8")) as Check[];
    const failures = checks.filter((check) => check.status === "FAILURE");
    const ids = (status: Check["status"]) =>
      new Set(checks.filter((check) => check.status === status).map((check) => check.id));
    outcomes.set(scenario, {
      passed: failures.length === 0,
      failures,
      succeeded: ids("SUCCESS"),
      warned: ids("WARNING"),
    });
  }
  // No file at all: the suite itself failed (its output says why).
  if (outcomes.size === 0 && failedRun) throw failedRun;
  return outcomes;
}

it("passes through a one-provider session every scenario the upstream passes directly", async () => {
  const started = Date.now();
  const direct = await runSuite(upstream.url);
  const proxied = await runSuite(sessionUrl);
  const scenarios = [...new Set([...direct.keys(), ...proxied.keys()])].sort();
  const mark = (outcome: Outcome | undefined) =>
    outcome ? `${outcome.passed ? "pass" : "FAIL"} ${outcome.succeeded.size}/${outcome.warned.size}` : "none";
  const width = Math.max(...scenarios.map((s) => s.length));
  const rows = scenarios.map((s) => {
    const failed = proxied.get(s)?.failures.map((check) => `${check.id}: ${check.errorMessage ?? check.description}`);
    return `${s.padEnd(width)}  ${mark(direct.get(s)).padEnd(8)}  ${mark(proxied.get(s)).padEnd(8)}  ${failed?.join("; ") ?? ""}`;
  });
  console.log(
    [
      `${"scenario".padEnd(width)}  direct    session   (pass/FAIL successful/warned checks; session failures)`,
      ...rows,
    ].join("\n"),
    `\n(${((Date.now() - started) / 1000).toFixed(1)} s for both runs)`,
  );

  // The fixture is the fair upstream only while it passes everything: 32 scenarios in 0.1.16's `all` suite.
  expect(direct.size).toBe(32);
  expect([...direct].filter(([, outcome]) => !outcome.passed).map(([s]) => s)).toEqual([]);
  const regressions = [...direct]
    .filter(([s, outcome]) => outcome.passed && !proxied.get(s)?.passed)
    .map(([s]) => ({ scenario: s, failures: proxied.get(s)?.failures.map((check) => check.id) ?? "no result" }));
  expect(regressions).toEqual([]);
  const weaker = [...direct]
    .map(([s, outcome]) => ({
      scenario: s,
      notRun: [...outcome.succeeded].filter((id) => !proxied.get(s)?.succeeded.has(id)),
      newWarnings: [...(proxied.get(s)?.warned ?? [])].filter((id) => !outcome.warned.has(id)),
    }))
    .filter(({ notRun, newWarnings }) => notRun.length + newWarnings.length > 0);
  expect(weaker).toEqual([]);
}, 600_000);

/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12), a client nobody here wrote, run for
 * each revision exactly as that revision requires it (`server --requirements <revision>`: the 2025-11-25 scenarios
 * with initialize and Mcp-Session-Id, the stateless 2026-07-28 ones with per-request `_meta`) against the upstream of
 * that era, twice: directly, and through a one-provider session. A session is a faithful proxy when every scenario that
 * passes directly passes through it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type AuthProxy, startAuthProxy } from "../support/auth-proxy.ts";
import { type ConformanceUpstream, startConformanceUpstream } from "../support/conformance-upstream.ts";
import { startModernConformanceUpstream } from "../support/conformance-upstream-2026.ts";
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

/**
 * Each revision's run: its upstream (the fixture of its era, which speaks only that era, so the session reaches it in
 * the revision under test), how many scenarios the revision requires, the scenarios the fixture itself fails (what
 * the SDK's serving does not do; they prove nothing about the gateway), and
 * the scenarios the session is known to fail while the fixture passes them, each with the gateway bug that fails it.
 */
interface Revision {
  start: () => Promise<ConformanceUpstream>;
  scenarios: number;
  failingDirectly: string[];
  knownGatewayBugs: Record<string, string>;
}

const REVISIONS: Record<"2025-11-25" | "2026-07-28", Revision> = {
  "2025-11-25": {
    start: startConformanceUpstream,
    scenarios: 33,
    failingDirectly: [],
    knownGatewayBugs: {
      // Passes (its checks are SHOULDs), but one of them does not run: the fixture closes its SSE answer mid-call
      // (SEP-1699 polling, a server's option) and the client resumes it with Last-Event-ID; the gateway resumes the
      // upstream's stream itself and keeps its own answer to the client open, so there is nothing to resume.
      "server-sse-polling":
        "the gateway keeps a 2025 SSE answer open where its upstream polls (no disconnect to resume)",
    },
  },
  "2026-07-28": {
    start: startModernConformanceUpstream,
    scenarios: 50,
    failingDirectly: [
      // SEP-2243 custom headers: the SDK checks Mcp-Param-* only for tools registered on its high-level McpServer.
      "http-custom-header-server-validation",
    ],
    knownGatewayBugs: {},
  },
};

let tools: McpTools;
let t: StartedTestServer;
const upstreamsByRevision = new Map<string, ConformanceUpstream>();
const sessionUrls = new Map<string, string>();
const proxies: AuthProxy[] = [];
const outputDirs: string[] = [];

beforeAll(async () => {
  // Links to its own port: the gateway accepts browser Origins of its public URL (its own origin here), which the
  // auth proxy below stands in front of.
  const revisions = Object.entries(REVISIONS);
  let started: ConformanceUpstream[];
  [tools, t, started] = await Promise.all([
    mcpTools(),
    startTestServer({ linksToOwnPort: true }),
    Promise.all(revisions.map(([, revision]) => revision.start())),
  ]);
  for (const [i, [name]] of revisions.entries()) {
    const upstream = started[i] as ConformanceUpstream;
    upstreamsByRevision.set(name, upstream);
    const provider = await remoteProvider(t.db, `conformance-${i}`, upstream.url);
    const deployment = await deployProvider(t.client, provider.providerId, `Conformance ${name}`);
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
    // The suite cannot send headers, and a `?key=` credential would not do: some scenarios' raw requests keep only
    // the URL's path. So the suite talks to a reverse proxy that adds `Authorization: Bearer <secret>` to every
    // request. The dns-rebinding-protection scenario sends the Origin of the URL it was given and expects it
    // accepted, and foreign Origins expecting a 4xx: the proxy turns its own origin into the gateway's public one,
    // as a browser on the public URL would send it, and passes every other Origin unchanged, so the gateway's own
    // Origin check (its public origin, no TOOLPLANE_ALLOWED_ORIGINS) is what accepts and refuses them — allowing the
    // proxy's origin in the gateway's settings instead would test a setting, and the proxy deciding would test
    // nothing of the gateway.
    const proxy = await startAuthProxy({ target: endpointOf(t, session).toString(), token: session.secret });
    proxies.push(proxy);
    sessionUrls.set(name, proxy.url);
  }
}, 600_000);

afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  await upstreams.closeAll();
  await Promise.all([...[...upstreamsByRevision.values()].map((upstream) => upstream.close()), t?.close()]);
  for (const dir of outputDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs what a revision requires against a URL and reads the `checks.json` it writes per scenario (in
 * `server-<scenario>-<timestamp>/`). A scenario that threw has no file: the caller sees it missing.
 */
async function runSuite(url: string, revision: string): Promise<Map<string, Outcome>> {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-conformance-"));
  outputDirs.push(dir);
  // The suite exits 1 when a scenario fails; the outcomes are in its files either way.
  const args = [tools.conformance, "server", "--url", url, "--requirements", revision, "-o", dir];
  const failedRun = await run(tools.node, args, { timeoutMs: 240_000 }).then(
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

it.each(Object.entries(REVISIONS))(
  "%s: passes through a one-provider session every scenario the upstream passes directly",
  async (name, revision) => {
    const started = Date.now();
    const direct = await runSuite(upstreamsByRevision.get(name)?.url ?? "", name);
    const proxied = await runSuite(sessionUrls.get(name) ?? "", name);
    const scenarios = [...new Set([...direct.keys(), ...proxied.keys()])].sort();
    const mark = (outcome: Outcome | undefined) =>
      outcome ? `${outcome.passed ? "pass" : "FAIL"} ${outcome.succeeded.size}/${outcome.warned.size}` : "none";
    const width = Math.max(...scenarios.map((s) => s.length));
    const rows = scenarios.map((s) => {
      const failed = proxied.get(s)?.failures.map((check) => `${check.id}: ${check.errorMessage ?? check.description}`);
      return `${s.padEnd(width)}  ${mark(direct.get(s)).padEnd(9)}  ${mark(proxied.get(s)).padEnd(9)}  ${failed?.join("; ") ?? ""}`;
    });
    console.log(
      [
        `${name}: ${"scenario".padEnd(width - name.length - 2)}  direct     session    (pass/FAIL successful/warned checks; session failures)`,
        ...rows,
      ].join("\n"),
      `\n(${((Date.now() - started) / 1000).toFixed(1)} s for both runs)`,
    );

    // The fixture is the fair upstream only while it passes everything of its revision but what it is known not to do.
    expect(direct.size).toBe(revision.scenarios);
    expect([...direct].filter(([, outcome]) => !outcome.passed).map(([s]) => s)).toEqual(revision.failingDirectly);
    const regressions = [...direct]
      .filter(([s, outcome]) => outcome.passed && !proxied.get(s)?.passed)
      .map(([s]) => ({ scenario: s, failures: proxied.get(s)?.failures.map((check) => check.id) ?? "no result" }));
    const weaker = [...direct]
      .filter(([, outcome]) => outcome.passed)
      .map(([s, outcome]) => ({
        scenario: s,
        notRun: [...outcome.succeeded].filter((id) => !proxied.get(s)?.succeeded.has(id)),
        newWarnings: [...(proxied.get(s)?.warned ?? [])].filter((id) => !outcome.warned.has(id)),
      }))
      .filter(({ notRun, newWarnings }) => notRun.length + newWarnings.length > 0);
    // A known bug that stops showing is fixed: drop it from the list, so the scenario guards the fix from then on.
    expect([...new Set([...regressions.map((r) => r.scenario), ...weaker.map((w) => w.scenario)])].sort()).toEqual(
      Object.keys(revision.knownGatewayBugs).sort(),
    );
  },
  600_000,
);

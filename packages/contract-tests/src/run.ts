import { writeFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createSuiteContext } from "./context.ts";
import { formatJUnit } from "./junit.ts";
import { freePort, type PrismProxy, startPrism } from "./prism.ts";
import { CheckFailed, type CheckResult, formatViolation, Recorder } from "./recorder.ts";
import { connectToServer, type RemoteTarget } from "./remote.ts";
import { buildReport, type ContractReport } from "./report.ts";
import { type RunningServer, startToolplane } from "./server.ts";
import { bundledSpecPath, listOperations, type OperationId, readSpec, type SpecOperation } from "./spec.ts";
import { suites as defaultSuites, probeNotImplemented, type Suite } from "./suite/index.ts";
import { ResponseValidator } from "./validator.ts";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const DEFAULT_REPORT_PATH = fileURLToPath(new URL("../../../contract-report.json", import.meta.url));

export interface RunOptions {
  suites?: Suite[];
  specPath?: string;
  /** Where the JSON report goes; null writes none. */
  reportPath?: string | null;
  /** Where the JUnit XML goes; by default beside the JSON report (`<report>.junit.xml`); null writes none. */
  junitPath?: string | null;
  /** A server that is already running, instead of ours in-process on a fresh database. */
  target?: RemoteTarget;
  log?: (line: string) => void;
}

export interface RunResult {
  report: ContractReport;
  passed: number;
  failed: number;
  /** Where the JUnit XML was written, if anywhere. */
  junitPath: string | null;
}

/** Which operations each suite claims; throws on an unknown tag or operation, or one claimed twice. */
export function claimOperations(suites: Suite[], operations: SpecOperation[]): Map<Suite, SpecOperation[]> {
  const byId = new Map(operations.map((op) => [op.operationId, op]));
  const claimedBy = new Map<OperationId, string>();
  const result = new Map<Suite, SpecOperation[]>();
  for (const suite of suites) {
    const ofTag = operations.filter((op) => op.tag === suite.tag);
    if (ofTag.length === 0) throw new Error(`Suite "${suite.tag}": no operation of the spec has this tag`);
    const claimed = (suite.operations ?? ofTag.map((op) => op.operationId)).map((id) => {
      const op = byId.get(id);
      if (!op) throw new Error(`Suite "${suite.tag}" claims ${id}, which the spec does not have`);
      const previous = claimedBy.get(id);
      if (previous) throw new Error(`${id} is claimed by both "${previous}" and "${suite.tag}"`);
      claimedBy.set(id, suite.tag);
      return op;
    });
    result.set(suite, claimed);
  }
  return result;
}

/**
 * The whole contract run: the server in-process on a fresh database (or the running server of `target`), Prism
 * in front of it, every suite, the 501 probe for every operation no suite claims, then the reports (JSON and
 * JUnit). Always stops Prism and the server.
 */
export async function runContractTests(options: RunOptions = {}): Promise<RunResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const started = performance.now();
  const since = (t: number) => `${((performance.now() - t) / 1000).toFixed(1)} s`;
  const specPath = options.specPath ?? bundledSpecPath;
  const spec = readSpec(specPath);
  const operations = listOperations(spec);
  const suites = options.suites ?? defaultSuites;
  const claims = claimOperations(suites, operations);
  const implemented = new Set([...claims.values()].flat().map((op) => op.operationId));
  const recorder = new Recorder(operations, new ResponseValidator(spec, operations));
  const printFailure = (check: CheckResult, withHint = true) => {
    log(`    ✗ ${check.operationId ?? "(run)"} — ${check.label}`);
    for (const problem of check.problems) if (withHint || !problem.startsWith("hint:")) log(`        ${problem}`);
  };
  recorder.onCheck = (check) => {
    if (!check.ok) printFailure(check);
  };

  log(
    `Spec: ${relative(REPO_ROOT, specPath)} (${operations.length} operations, ${implemented.size} claimed by suites)`,
  );
  let server: RunningServer | undefined;
  let prism: PrismProxy | undefined;
  try {
    // Prism needs only the upstream's address to start, so both start at once on a reserved port.
    let t = performance.now();
    const { target } = options;
    const serverPort = await freePort();
    let prismPort = await freePort();
    while (prismPort === serverPort) prismPort = await freePort();
    const upstream = target ? target.baseUrl.replace(/\/+$/, "") : `http://127.0.0.1:${serverPort}`;
    log(
      target
        ? `Running against ${upstream}, prism proxy in front of it…`
        : "Starting the server in-process on a fresh embedded PGlite database, and prism proxy in front of it…",
    );
    const [serverStart, prismStart] = await Promise.allSettled([
      (target ? connectToServer(target) : startToolplane({ port: serverPort })).then((s) => {
        log(`  server on ${s.url}, tenants ${s.tenants.map((x) => x.instanceId).join(" and ")} (${since(t)})`);
        return s;
      }),
      startPrism({ specPath, upstream, port: prismPort }).then((p) => {
        log(`  prism proxy --errors --validate-request=false on ${p.url} (${since(t)})`);
        return p;
      }),
    ]);
    if (serverStart.status === "fulfilled") server = serverStart.value;
    if (prismStart.status === "fulfilled") prism = prismStart.value;
    if (serverStart.status === "rejected") throw serverStart.reason;
    if (prismStart.status === "rejected") throw prismStart.reason;
    if (!server || !prism) throw new Error("unreachable");
    recorder.proxyOrigin = new URL(prism.url).origin;

    const ctx = createSuiteContext({
      proxyUrl: prism.url,
      serverUrl: server.url,
      tenants: server.tenants,
      db: server.db,
      bodyLimitBytes: server.bodyLimitBytes,
      operations,
      recorder,
      log: (line) => log(`    ${line}`),
    });

    for (const [suite, claimed] of claims) {
      t = performance.now();
      const before = recorder.checks.length;
      log(`▸ ${suite.tag}: suite over ${claimed.length} operations`);
      try {
        await suite.run(ctx);
      } catch (err) {
        if (err instanceof CheckFailed) log(`    suite stopped: ${err.message}`);
        else recorder.fail(undefined, `${suite.tag}: suite threw`, (err as Error).stack ?? String(err));
      }
      for (const op of claimed) {
        const success = recorder.checks.some(
          (c) => c.operationId === op.operationId && c.ok && c.actual === op.successStatus,
        );
        if (!success) {
          recorder.fail(op.operationId, "success path", `the suite never checked a ${op.successStatus} answer`);
        }
      }
      const mine = recorder.checks.slice(before);
      log(`  ${mine.length} checks, ${mine.filter((c) => !c.ok).length} failed (${since(t)})`);
    }

    const unclaimed = operations.filter((op) => !implemented.has(op.operationId));
    const tags = [...new Set(unclaimed.map((op) => op.tag))];
    t = performance.now();
    log(`▸ Not implemented: ${unclaimed.length} operations in ${tags.length} tags, each must answer 501`);
    const printAsTheyCome = recorder.onCheck;
    recorder.onCheck = undefined;
    for (const tag of tags) {
      const ofTag = unclaimed.filter((op) => op.tag === tag);
      const before = recorder.checks.length;
      await Promise.all(
        ofTag.map((op) =>
          probeNotImplemented(ctx, op).catch((err: unknown) => {
            if (!(err instanceof CheckFailed)) recorder.fail(op.operationId, "501 probe threw", String(err));
          }),
        ),
      );
      const failed = recorder.checks.slice(before).filter((c) => !c.ok);
      log(`  ${tag}: ${ofTag.length} operations${failed.length ? `, ${failed.length} failed` : ""}`);
      for (const check of failed) printFailure(check, false);
      if (failed.some((c) => c.actual !== undefined && c.actual !== 501)) {
        log(`    → "${tag}" answers for real now: add its suite in src/suite/ and register it in src/suite/index.ts`);
      }
    }
    recorder.onCheck = printAsTheyCome;
    log(`  (${since(t)})`);

    for (const o of recorder.uncheckedProblems()) {
      const problems = o.violations.map((v) => `sl-violations ${formatViolation(v)}`);
      if (o.prismError) problems.push(`answered by Prism, not the server: ${o.prismError}`);
      recorder.fail(o.operationId, `unchecked response to ${o.method} ${o.url} (${o.status})`, problems.join("; "));
    }
  } catch (err) {
    recorder.fail(undefined, "runner", (err as Error).stack ?? String(err));
  } finally {
    await prism?.stop();
    await server?.close();
  }

  const report = buildReport({
    operations,
    implemented,
    recorder,
    durationMs: performance.now() - started,
    spec: relative(REPO_ROOT, specPath),
  });
  const reportPath = options.reportPath === undefined ? DEFAULT_REPORT_PATH : options.reportPath;
  if (reportPath) writeFileSync(reportPath, `${JSON.stringify(report, null, 2)}\n`);
  const junitPath =
    options.junitPath === undefined
      ? reportPath && `${reportPath.replace(/\.json$/i, "")}.junit.xml`
      : options.junitPath;
  if (junitPath) writeFileSync(junitPath, formatJUnit(report, recorder.checks));
  return { report, passed: report.summary.passed, failed: report.summary.failed, junitPath: junitPath || null };
}

import { type CheckResult, formatViolation, type Recorder } from "./recorder.ts";
import type { SpecOperation } from "./spec.ts";

export interface ReportedViolation {
  request: string;
  status: number;
  severity: string;
  message: string;
  location?: (string | number)[];
}

export interface OperationReport {
  method: string;
  path: string;
  tag: string;
  /**
   * Answers for real: was answered at least once, and never with 501. An operation that answered 501 anywhere is a gap, whatever claims it: a handler wired to
   * `notImplemented` behind a suite is not an implementation.
   */
  implemented: boolean;
  /** Claimed by a suite in src/suite/ (success and error paths driven); otherwise probed once for 501. */
  suite: boolean;
  documented: number[];
  /** Every status a response carried for this operation. */
  statusesSeen: number[];
  /** Of those, the ones seen only on requests sent to the server directly (what Prism cannot pass on). */
  statusesSeenOnlyDirect: number[];
  /** Documented statuses not exercised (implemented operations only; 500 and 501 left out). */
  statusesMissing: number[];
  checks: number;
  failedChecks: number;
  violations: ReportedViolation[];
}

export interface ContractReport {
  generatedAt: string;
  durationMs: number;
  spec: string;
  summary: {
    operations: number;
    implemented: number;
    notImplemented: number;
    /** Implemented operations no suite claims (the run fails until one does). */
    withoutSuite: number;
    checks: number;
    passed: number;
    failed: number;
    violations: number;
    /** Documented (operation, status) pairs exercised, over all documented pairs. */
    statusesExercised: number;
    statusesDocumented: number;
  };
  operations: Record<string, OperationReport>;
  failures: { operationId: string | null; label: string; problems: string[] }[];
}

export function buildReport(input: {
  operations: SpecOperation[];
  implemented: Set<string>;
  recorder: Recorder;
  durationMs: number;
  spec: string;
}): ContractReport {
  const { recorder } = input;
  const operations: Record<string, OperationReport> = {};
  let exercised = 0;
  let documentedPairs = 0;
  for (const op of input.operations) {
    const observations = recorder.observations.filter((o) => o.operationId === op.operationId);
    const checks = recorder.checks.filter((c) => c.operationId === op.operationId);
    const seen = [...new Set(observations.map((o) => o.status))].sort((a, b) => a - b);
    const viaPrism = new Set(observations.filter((o) => o.via === "prism").map((o) => o.status));
    const suite = input.implemented.has(op.operationId);
    // Through Prism a 501 is never seen as such: Prism serves a mock in its place (README), noted as `remocked`.
    const answered501 = observations.some((o) => o.status === 501 || o.remocked);
    // Not seen at all (a run that stopped early, a suite that ended before it) is not evidence either way.
    const implemented = !answered501 && seen.length > 0;
    exercised += op.documented.filter((s) => seen.includes(s)).length;
    documentedPairs += op.documented.length;
    operations[op.operationId] = {
      method: op.method.toUpperCase(),
      path: op.path,
      tag: op.tag,
      implemented,
      suite,
      documented: op.documented,
      statusesSeen: seen,
      statusesSeenOnlyDirect: seen.filter((status) => !viaPrism.has(status)),
      statusesMissing: suite ? op.documented.filter((s) => s !== 500 && s !== 501 && !seen.includes(s)) : [],
      checks: checks.length,
      failedChecks: checks.filter((c) => !c.ok).length,
      violations: observations.flatMap((o) =>
        o.violations.map((v) => ({ request: `${o.method} ${o.url}`, status: o.status, ...v })),
      ),
    };
  }
  const failed = recorder.checks.filter((c) => !c.ok);
  const reports = Object.values(operations);
  return {
    generatedAt: new Date().toISOString(),
    durationMs: Math.round(input.durationMs),
    spec: input.spec,
    summary: {
      operations: input.operations.length,
      implemented: reports.filter((r) => r.implemented).length,
      notImplemented: reports.filter((r) => !r.implemented).length,
      withoutSuite: reports.filter((r) => r.implemented && !r.suite).length,
      checks: recorder.checks.length,
      passed: recorder.checks.length - failed.length,
      failed: failed.length,
      violations: recorder.observations.reduce((n, o) => n + o.violations.length, 0),
      statusesExercised: exercised,
      statusesDocumented: documentedPairs,
    },
    operations,
    failures: failed.map((c: CheckResult) => ({
      operationId: c.operationId ?? null,
      label: c.label,
      problems: c.problems,
    })),
  };
}

/** The coverage table: one row per operation, grouped by tag, then the summary. */
export function formatReport(report: ContractReport): string[] {
  const rows = Object.entries(report.operations);
  const idWidth = Math.max(...rows.map(([id]) => id.length));
  // Path parameters shortened to `{}`: the operationId beside them already says which is which.
  const routeOf = (r: OperationReport) => `${r.method} ${r.path.replace(/\{[^}]+\}/g, "{}")}`;
  const routeWidth = Math.max(...rows.map(([, r]) => routeOf(r).length));
  const lines: string[] = [];
  const header = `${"  operation".padEnd(idWidth + 4)} ${"route".padEnd(routeWidth)}  ${"state".padEnd(8)}  statuses exercised`;
  lines.push("", "Contract coverage", header);
  let tag: string | undefined;
  for (const [id, r] of rows) {
    if (r.tag !== tag) {
      tag = r.tag;
      const ops = rows.filter(([, x]) => x.tag === tag);
      const impl = ops.filter(([, x]) => x.implemented).length;
      const noSuite = ops.some(([, x]) => x.implemented && !x.suite) ? ", NO SUITE: add one in src/suite/" : "";
      lines.push(`${tag} (${impl}/${ops.length} implemented${noSuite})`);
    }
    const mark = r.failedChecks > 0 || r.violations.length > 0 ? "✗" : "✓";
    const shownRoute = routeOf(r);
    const state = r.implemented ? (r.suite ? "impl" : "NO SUITE") : r.statusesSeen.length > 0 ? "501" : "unseen";
    let statuses = r.statusesSeen.map((st) => (r.statusesSeenOnlyDirect.includes(st) ? `${st}*` : `${st}`)).join(" ");
    statuses ||= "-";
    if (r.statusesMissing.length > 0) statuses += `  (not exercised: ${r.statusesMissing.join(" ")})`;
    if (r.violations.length > 0) statuses += `  VIOLATIONS: ${r.violations.length}`;
    if (r.failedChecks > 0) statuses += `  FAILED: ${r.failedChecks}/${r.checks}`;
    lines.push(`${mark} ${id.padEnd(idWidth + 2)} ${shownRoute.padEnd(routeWidth)}  ${state.padEnd(8)}  ${statuses}`);
  }
  lines.push("* seen only on requests sent to the server directly: Prism replaces upstream 501s with mocks");
  const s = report.summary;
  if (report.failures.length > 0) {
    lines.push("", "Failures");
    for (const f of report.failures) {
      lines.push(`✗ ${f.operationId ?? "(run)"} — ${f.label}`);
      for (const p of f.problems) lines.push(`    ${p}`);
    }
  }
  const violations = rows.flatMap(([id, r]) => r.violations.map((v) => ({ id, v })));
  if (violations.length > 0) {
    lines.push("", "sl-violations");
    for (const { id, v } of violations) lines.push(`  ${id}: ${v.request} → ${v.status}: ${formatViolation(v)}`);
  }
  lines.push(
    "",
    `Operations: ${s.operations} (${s.implemented} implemented, ${s.notImplemented} answering 501 or never answered` +
      `${s.withoutSuite ? `, ${s.withoutSuite} implemented without a suite` : ""}) · ` +
      `documented statuses exercised: ${s.statusesExercised}/${s.statusesDocumented} · ` +
      `violations: ${s.violations} · checks: ${s.checks} · ${(report.durationMs / 1000).toFixed(1)} s`,
  );
  return lines;
}

// The contract run as JUnit XML, for CI systems that show test results (GitLab, Jenkins, GitHub test reporters):
// one <testsuite> per spec tag, one <testcase> per check (classname: the operationId), a <failure> with the
// check's problems, and one <skipped> case per gap (an operation answering 501), so gaps are visible in the same
// place without failing the build. Checks of no operation (runner failures) go to a "runner" suite.
import type { CheckResult } from "./recorder.ts";
import type { ContractReport } from "./report.ts";

interface Case {
  classname: string;
  name: string;
  failure?: string;
  skipped?: string;
}

export function formatJUnit(report: ContractReport, checks: CheckResult[]): string {
  const byTag = new Map<string, Case[]>();
  const add = (tag: string, c: Case) => {
    const cases = byTag.get(tag) ?? [];
    cases.push(c);
    byTag.set(tag, cases);
  };
  for (const check of checks) {
    const op = check.operationId ? report.operations[check.operationId] : undefined;
    add(op?.tag ?? "runner", {
      classname: check.operationId ?? "runner",
      name: check.label,
      failure: check.ok ? undefined : check.problems.join("\n") || "failed",
    });
  }
  for (const [operationId, op] of Object.entries(report.operations)) {
    if (op.implemented) continue;
    add(op.tag, {
      classname: operationId,
      name: "implemented",
      skipped:
        op.statusesSeen.length > 0
          ? `gap: ${op.method} ${op.path} answers 501 not_implemented`
          : `${op.method} ${op.path} was never answered in this run`,
    });
  }

  const seconds = (report.durationMs / 1000).toFixed(3);
  const count = (cases: Case[], key: "failure" | "skipped") => cases.filter((c) => c[key] !== undefined).length;
  const all = [...byTag.values()].flat();
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="contract" tests="${all.length}" failures="${count(all, "failure")}" errors="0" ` +
      `skipped="${count(all, "skipped")}" time="${seconds}" timestamp="${xml(report.generatedAt)}">`,
  ];
  for (const [tag, cases] of byTag) {
    lines.push(
      `  <testsuite name="${xml(tag)}" tests="${cases.length}" failures="${count(cases, "failure")}" ` +
        `errors="0" skipped="${count(cases, "skipped")}">`,
    );
    for (const c of cases) {
      const open = `    <testcase classname="${xml(c.classname)}" name="${xml(c.name)}"`;
      if (c.failure !== undefined) {
        const message = c.failure.split("\n")[0] ?? "";
        lines.push(`${open}>`, `      <failure message="${xml(message)}">${xml(c.failure)}</failure>`);
        lines.push("    </testcase>");
      } else if (c.skipped !== undefined) {
        lines.push(`${open}>`, `      <skipped message="${xml(c.skipped)}"/>`, "    </testcase>");
      } else {
        lines.push(`${open}/>`);
      }
    }
    lines.push("  </testsuite>");
  }
  lines.push("</testsuites>", "");
  return lines.join("\n");
}

// XML 1.0 allows no control characters but tab, newline and carriage return, even escaped: they are dropped.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const INVALID_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

function xml(text: string): string {
  return text
    .replace(INVALID_XML, "")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

// `pnpm test:contract`: regenerate (a turbo cache hit unless the spec changed), then the contract run, its
// coverage table, contract-report.json at the repo root, and exit code 1 on any failure.
//   --no-generate     skip `turbo run generate`
//   --report=<path>   write the JSON report elsewhere
import { spawnSync } from "node:child_process";
import { join, relative } from "node:path";
import { formatReport } from "./report.ts";
import { DEFAULT_REPORT_PATH, REPO_ROOT, runContractTests } from "./run.ts";

// `on`, not `once`: a second signal (tsx relays one more when the first seems unanswered) must not fall back to
// the default action, which would exit without the exit hooks that stop Prism and remove the data directory.
let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\nContract run interrupted (${signal}).`);
    process.exit(130);
  });
}

const args = process.argv.slice(2);
const reportArg = args.find((a) => a.startsWith("--report="));
const reportPath = reportArg ? reportArg.slice("--report=".length) : DEFAULT_REPORT_PATH;

if (!args.includes("--no-generate")) {
  const started = performance.now();
  console.log("Bundling the spec and regenerating (turbo run generate)…");
  const turbo = spawnSync(
    join(REPO_ROOT, "node_modules/.bin/turbo"),
    ["run", "generate", "--filter=@toolplane/contract-tests...", "--output-logs=errors-only"],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...process.env, TURBO_TELEMETRY_DISABLED: "1", REDOCLY_TELEMETRY: "off", NO_UPDATE_NOTIFIER: "1" },
    },
  );
  if (turbo.status !== 0) {
    console.error(turbo.stdout, turbo.stderr, turbo.error ?? "");
    console.log("0 passed, 1 failed");
    process.exit(1);
  }
  console.log(`  done (${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

try {
  const { report, passed, failed } = await runContractTests({ reportPath });
  for (const line of formatReport(report)) console.log(line);
  console.log(`Report: ${relative(REPO_ROOT, reportPath) || reportPath}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
} catch (err) {
  console.error(err);
  console.log("0 passed, 1 failed");
  process.exit(1);
}

// `pnpm test:contract`: regenerate (a turbo cache hit unless the spec changed), then the contract run, its
// coverage table, contract-report.json and contract-report.junit.xml at the repo root, and exit code 1 on any
// failure.
//   --no-generate            skip `turbo run generate`
//   --report=<path>          write the JSON report elsewhere (the JUnit XML goes beside it: <path>.junit.xml)
//   --junit=<path>           write the JUnit XML elsewhere
//   --base-url <url>         run against this running server instead of ours in-process
//   --api-key <key>          with --base-url: the key the suites act with (tenant a)…
//   --other-api-key <key>    …and a key of another instance (tenant b: its ids must be 404 to tenant a)
//   --database-url <url>     with --base-url and our server on PostgreSQL: create both tenants there instead,
//                            and let the suites seed what no API creates yet
//   --body-limit-bytes <n>   with --base-url: the server's JSON body limit (413 checks)
// Each option also takes the form --name=value.
import { spawnSync } from "node:child_process";
import { join, relative } from "node:path";
import { type RemoteTarget, TWO_TENANTS_NEEDED } from "./remote.ts";
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
/** `--name value` or `--name=value`; undefined when absent. */
function option(name: string): string | undefined {
  const at = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (at < 0) return undefined;
  const arg = args[at] ?? "";
  const value = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : args[at + 1];
  if (value === undefined || value.startsWith("--")) usage(`--${name} needs a value`);
  return value;
}
function usage(message: string): never {
  console.error(message);
  console.log("0 passed, 1 failed");
  process.exit(2);
}

const reportPath = option("report") ?? DEFAULT_REPORT_PATH;
const baseUrl = option("base-url");
const bodyLimit = option("body-limit-bytes");
const target: RemoteTarget | undefined = baseUrl
  ? {
      baseUrl,
      apiKey: option("api-key"),
      otherApiKey: option("other-api-key"),
      databaseUrl: option("database-url"),
      bodyLimitBytes: bodyLimit === undefined ? undefined : Number(bodyLimit),
    }
  : undefined;
if (!baseUrl && ["api-key", "other-api-key", "database-url", "body-limit-bytes"].some((o) => option(o))) {
  usage("--api-key, --other-api-key, --database-url and --body-limit-bytes go with --base-url");
}
if (target && !target.databaseUrl && !(target.apiKey && target.otherApiKey)) usage(TWO_TENANTS_NEEDED);
if (target?.bodyLimitBytes !== undefined && !(target.bodyLimitBytes > 0))
  usage("--body-limit-bytes: a positive number");

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
  const { report, passed, failed, junitPath } = await runContractTests({
    reportPath,
    junitPath: option("junit"),
    target,
  });
  for (const line of formatReport(report)) console.log(line);
  console.log(`Report: ${relative(REPO_ROOT, reportPath) || reportPath}`);
  if (junitPath) console.log(`JUnit:  ${relative(REPO_ROOT, junitPath) || junitPath}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
} catch (err) {
  console.error(err);
  console.log("0 passed, 1 failed");
  process.exit(1);
}

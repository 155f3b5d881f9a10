// Runs a command against a throwaway PostgreSQL server on 127.0.0.1: installs PostgreSQL from Debian when it is
// missing, initdb's a temporary cluster, starts it on a free port, runs the command with TEST_DATABASE_URL set,
// and always stops and removes the cluster afterwards.
//   node scripts/with-postgres.mjs <command> [args…]
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node scripts/with-postgres.mjs <command> [args…]");
  process.exit(2);
}
const isRoot = process.getuid?.() === 0;

function binDir() {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const version = readdirSync(base).sort((a, b) => Number(b) - Number(a))[0];
  return version ? join(base, version, "bin") : undefined;
}

let bin = binDir();
if (!bin) {
  if (!isRoot)
    throw new Error("PostgreSQL is not installed and installing it needs root (apt-get install postgresql).");
  console.log("postgres: installing PostgreSQL from Debian (apt-get)…");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "postgresql"], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  bin = binDir();
  if (!bin) throw new Error("PostgreSQL binaries not found after installing.");
}

const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const dir = mkdtempSync(join(tmpdir(), "toolplane-pg-"));
const data = join(dir, "data");
chmodSync(dir, 0o777);
// PostgreSQL refuses to run as root: as root, run its binaries as the `postgres` user Debian creates.
const asOwner = (file, argv) =>
  isRoot
    ? execFileSync("su", ["postgres", "-c", [file, ...argv].map((a) => `'${a}'`).join(" ")], { stdio: "pipe" })
    : execFileSync(file, argv, { stdio: "pipe" });

console.log(`postgres: starting a throwaway cluster on 127.0.0.1:${port}`);
asOwner(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "app", "--no-sync"]);
asOwner(join(bin, "pg_ctl"), [
  "-D",
  data,
  "-o",
  `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off`,
  "-l",
  join(dir, "log"),
  "-w",
  "start",
]);

const stop = () => {
  try {
    asOwner(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"]);
  } catch {
    // already stopped
  }
  rmSync(dir, { recursive: true, force: true });
};

const child = spawn(command, args, {
  stdio: "inherit",
  env: { ...process.env, TEST_DATABASE_URL: `postgres://app@127.0.0.1:${port}/postgres` },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
const code = await new Promise((resolve) => child.on("exit", (c, s) => resolve(c ?? (s ? 1 : 0))));
stop();
console.log("postgres: stopped and removed");
process.exit(code);

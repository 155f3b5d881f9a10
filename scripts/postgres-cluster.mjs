// A throwaway PostgreSQL cluster on 127.0.0.1: used by with-postgres.mjs (the test:pg run) and by tests that must
// break their own server (the database-outage test kills its postmaster). Installs PostgreSQL from Debian when
// it is missing and runs as root.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const isRoot = process.getuid?.() === 0;

function binDir() {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const version = readdirSync(base).sort((a, b) => Number(b) - Number(a))[0];
  return version ? join(base, version, "bin") : undefined;
}

function ensureInstalled() {
  let bin = binDir();
  if (bin) return bin;
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
  return bin;
}

export const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

/**
 * initdb's and starts a cluster (trust auth, user `app`, fsync off); returns its URL (database `postgres`) and
 * controls: `start`/`stop` (pg_ctl), `kill9` (SIGKILL to the postmaster, as a crash), `remove` (stop and delete).
 */
export async function startCluster() {
  const bin = ensureInstalled();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "toolplane-pg-"));
  const data = join(dir, "data");
  chmodSync(dir, 0o777);
  // PostgreSQL refuses to run as root: as root, run its binaries as the `postgres` user Debian creates.
  const asOwner = (file, argv) =>
    isRoot
      ? execFileSync("su", ["postgres", "-c", [file, ...argv].map((a) => `'${a}'`).join(" ")], { stdio: "pipe" })
      : execFileSync(file, argv, { stdio: "pipe" });
  asOwner(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "app", "--no-sync"]);
  const options = `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off`;
  const start = () => asOwner(join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "start"]);
  const stop = () => {
    try {
      asOwner(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"]);
    } catch {
      // already stopped
    }
  };
  start();
  return {
    url: `postgres://app@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    kill9: () => {
      const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
      process.kill(pid, "SIGKILL");
    },
    remove: () => {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

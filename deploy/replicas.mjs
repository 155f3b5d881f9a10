#!/usr/bin/env node
// Runs Toolplane on this machine as N replicas of the built server over one PostgreSQL, behind nginx:
//
//   DATABASE_URL=postgres://… TOOLPLANE_SECRET_KEY=k1:<base64 of 32 bytes> \
//     node deploy/replicas.mjs [--replicas 3] [--port 8080] [--replica-port 8081] [--dist apps/server/dist]
//                              [--run-dir .deploy]
//
// nginx (Debian: `apt-get install nginx`) listens on 127.0.0.1:--port with deploy/nginx/toolplane.conf.template and
// balances over the replicas on 127.0.0.1:--replica-port and up. Every other variable (TOOLPLANE_PUBLIC_URL,
// LOG_LEVEL, …) is passed on to the replicas; TOOLPLANE_PUBLIC_URL defaults to nginx's address. The first replica
// starts alone: it applies pending migrations and, on an empty database, creates the first instance and prints its
// key; the others start once it is ready. A replica that exits is started again a second later (what a service
// manager's Restart=always does). The run directory holds nginx's files, replica-N.log and replica-N.pid.
// SIGTERM or SIGINT stops nginx and the replicas (each drains its requests) and exits.
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { DATABASE_URL, TOOLPLANE_SECRET_KEY, TOOLPLANE_PUBLIC_URL } = process.env;
const { values } = parseArgs({
  options: {
    replicas: { type: "string", default: "3" },
    port: { type: "string", default: "8080" },
    "replica-port": { type: "string" },
    dist: { type: "string", default: join(here, "../apps/server/dist") },
    "run-dir": { type: "string", default: ".deploy" },
  },
});
const replicas = Number(values.replicas);
const port = Number(values.port);
const firstReplicaPort = Number(values["replica-port"] ?? port + 1);
const dist = resolve(values.dist);
const runDir = resolve(values["run-dir"]);
const publicUrl = TOOLPLANE_PUBLIC_URL || `http://127.0.0.1:${port}`;
const say = (line) => process.stdout.write(`toolplane: ${line}\n`);

function fail(message) {
  process.stderr.write(`toolplane: ${message}\n`);
  process.exit(1);
}
if (!Number.isInteger(replicas) || replicas < 1) fail("--replicas must be a positive integer");
if (!DATABASE_URL) fail("DATABASE_URL must name the PostgreSQL database the replicas share");
if (!TOOLPLANE_SECRET_KEY) fail("TOOLPLANE_SECRET_KEY must be set (the same key ring on every replica)");
if (!existsSync(join(dist, "main.mjs"))) fail(`no build in ${dist}: run \`pnpm build\` (or pass --dist)`);
const nginxBin = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"].find((p) => existsSync(p));
if (!nginxBin) fail("nginx is not installed (Debian: apt-get install nginx)");

// The run directory holds logs (the first replica's prints the first API key): only its files' owner reads them,
// while nginx's workers (user nobody when started as root) may pass through to their temporary directories.
mkdirSync(join(runDir, "logs"), { recursive: true });
chmodSync(runDir, 0o711);

const replicaPorts = Array.from({ length: replicas }, (_, i) => firstReplicaPort + i);
const template = readFileSync(join(here, "nginx/toolplane.conf.template"), "utf8");
writeFileSync(
  join(runDir, "toolplane.conf"),
  template
    .replaceAll("{{LISTEN}}", `127.0.0.1:${port}`)
    .replaceAll(
      "{{UPSTREAM_SERVERS}}",
      replicaPorts.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=2s;`).join("\n"),
    ),
);
// nginx as a plain process of this script, with its own prefix: nothing of a system nginx is used or touched.
writeFileSync(
  join(runDir, "nginx.conf"),
  `daemon off;
worker_processes 1;
pid ${runDir}/nginx.pid;
error_log ${runDir}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log ${runDir}/logs/access.log;
  client_body_temp_path ${runDir}/tmp/body;
  proxy_temp_path ${runDir}/tmp/proxy;
  fastcgi_temp_path ${runDir}/tmp/fastcgi;
  uwsgi_temp_path ${runDir}/tmp/uwsgi;
  scgi_temp_path ${runDir}/tmp/scgi;
  include ${runDir}/toolplane.conf;
}
`,
);
mkdirSync(join(runDir, "tmp"), { recursive: true });
const nginxArgs = ["-p", runDir, "-c", join(runDir, "nginx.conf"), "-e", join(runDir, "logs/error.log")];
try {
  execFileSync(nginxBin, ["-t", "-q", ...nginxArgs], { stdio: "inherit" });
} catch {
  fail(`nginx refused the configuration in ${runDir} (see above)`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let stopping = false;
let keyShown = false;
const children = new Map();
const replicaUrl = (n) => `http://127.0.0.1:${replicaPorts[n - 1]}`;

/** Waits until the server at url answers /ready (or `alive` says the process is gone). */
async function ready(url, alive = () => true) {
  while (alive()) {
    const res = await fetch(`${url}/ready`).catch(() => undefined);
    if (res?.ok) return;
    await sleep(100);
  }
}

/** Starts replica n (1-based) and resolves once it answers /ready or exits; restarts it whenever it exits. */
async function startReplica(n) {
  const logFile = join(runDir, `replica-${n}.log`);
  const logStart = statSync(logFile, { throwIfNoEntry: false })?.size ?? 0;
  const log = openSync(logFile, "a", 0o600);
  const child = spawn(process.execPath, ["--max-semi-space-size=32", join(dist, "main.mjs")], {
    cwd: runDir,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(replicaPorts[n - 1]), TOOLPLANE_PUBLIC_URL: publicUrl },
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  children.set(n, child);
  writeFileSync(join(runDir, `replica-${n}.pid`), String(child.pid));
  const alive = () => child.exitCode === null && child.signalCode === null;
  child.once("exit", (code, signal) => {
    if (stopping) return;
    say(`replica ${n} (pid ${child.pid}) exited (${signal ?? `status ${code}`}); restarting`);
    setTimeout(() => void startReplica(n), 1_000);
  });
  await ready(replicaUrl(n), alive);
  if (!alive()) return;
  say(`replica ${n} (pid ${child.pid}) ready on ${replicaUrl(n)}`);
  // Only this start's output: a key in the log of an earlier run is not news.
  const key = /API key \(shown once\):\s+(\S+)/.exec(readFileSync(logFile, "utf8").slice(logStart))?.[1];
  if (key && !keyShown) {
    keyShown = true;
    say(`API key (shown once): ${key}`);
  }
}

const nginx = spawn(nginxBin, nginxArgs, { stdio: "inherit" });
nginx.once("exit", (code) => {
  if (stopping) return;
  process.stderr.write(`toolplane: nginx exited (status ${code}); see ${runDir}/logs/error.log\n`);
  void stop(1);
});

/** Stops nginx and the replicas (each drains its requests on SIGTERM), then exits with `status`. */
async function stop(status = 0) {
  if (stopping) return;
  stopping = true;
  say("stopping");
  const exits = [...children.values()].map((c) => {
    const exited = new Promise((r) => (c.exitCode === null && c.signalCode === null ? c.once("exit", r) : r()));
    c.kill("SIGTERM");
    return exited;
  });
  nginx.kill("SIGQUIT");
  await Promise.all(exits);
  for (let n = 1; n <= replicas; n++) rmSync(join(runDir, `replica-${n}.pid`), { force: true });
  process.exit(status);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

// One replica first: migrations and the first instance are made once, then the rest start side by side. (Each
// wait lasts across restarts: a replica that cannot start is retried until it can, or until stopped.)
await startReplica(1);
await ready(replicaUrl(1));
const others = replicaPorts.slice(1).map((_, i) => i + 2);
await Promise.all(others.map((n) => startReplica(n).then(() => ready(replicaUrl(n)))));
await ready(`http://127.0.0.1:${port}`);
say(`ready: ${replicas} replicas behind nginx on http://127.0.0.1:${port} (public URL ${publicUrl})`);

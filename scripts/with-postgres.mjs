// Runs a command against a throwaway PostgreSQL server on 127.0.0.1: installs PostgreSQL from Debian when it is
// missing, initdb's a temporary cluster, starts it on a free port, runs the command with TEST_DATABASE_URL set,
// and always stops and removes the cluster afterwards.
//   node scripts/with-postgres.mjs <command> [args…]
import { spawn } from "node:child_process";
import { startCluster } from "./postgres-cluster.mjs";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node scripts/with-postgres.mjs <command> [args…]");
  process.exit(2);
}

const cluster = await startCluster();
console.log(`postgres: started a throwaway cluster on 127.0.0.1:${cluster.port}`);

const child = spawn(command, args, {
  stdio: "inherit",
  env: { ...process.env, TEST_DATABASE_URL: cluster.url },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
const code = await new Promise((resolve) => {
  child.on("exit", (c, s) => resolve(c ?? (s ? 1 : 0)));
  // A command that cannot start (not found, not executable) emits no exit: the cluster must still go.
  child.on("error", (err) => {
    console.error(`postgres: could not run ${command}: ${err.message}`);
    resolve(127);
  });
});
cluster.remove();
console.log("postgres: stopped and removed");
process.exit(code);

import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

/** The Prism CLI installed with this package (`@stoplight/prism-cli`). */
export const PRISM_BIN = fileURLToPath(new URL("../node_modules/.bin/prism", import.meta.url));

export interface PrismOptions {
  /** The bundled OpenAPI document Prism validates against. */
  specPath: string;
  /** The server Prism forwards to, e.g. `http://127.0.0.1:8080`. */
  upstream: string;
  host?: string;
  /** Defaults to a free port. */
  port?: number;
  readyTimeoutMs?: number;
}

export interface PrismProxy {
  url: string;
  port: number;
  pid: number | undefined;
  /** Everything Prism printed so far (for diagnosing a failed start). */
  output(): string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** On any exit of this process (failure, SIGINT), no Prism is left behind. */
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const child of running) killGroup(child, "SIGKILL");
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    // Prism runs in its own process group (detached), so the group id is its pid: this stops it and any fork.
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `prism proxy <spec> <upstream> --errors --validate-request=false` and resolves once it listens.
 * Request validation is off so that invalid requests reach our server and get its own 400 `invalid_data`
 * (Prism would answer 422); responses are still validated: a response that breaks the spec comes back as
 * Prism's 500 with an `sl-violations` header, an undocumented status passes with a Warning in that header.
 */
export async function startPrism(options: PrismOptions): Promise<PrismProxy> {
  installExitHook();
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? (await freePort(host));
  const args = [
    "proxy",
    options.specPath,
    options.upstream,
    "--errors",
    "--validate-request=false",
    "--cors=false",
    "-h",
    host,
    "-p",
    String(port),
  ];
  const child = spawn(PRISM_BIN, args, {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NODE_NO_WARNINGS: "1", FORCE_COLOR: "0", NO_COLOR: "1" },
  });
  running.add(child);
  child.once("exit", () => running.delete(child));

  let output = "";
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 3_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    await new Promise<void>((resolve, reject) => {
      const timeoutMs = options.readyTimeoutMs ?? 60_000;
      const timer = setTimeout(
        () => reject(new Error(`Prism did not start within ${timeoutMs} ms:\n${output}`)),
        timeoutMs,
      );
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/Prism is listening/.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`Prism exited (${signal ?? code}) before listening:\n${output}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  // Keep draining its output (a full pipe would block it), remembering only the tail.
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.removeAllListeners("data").on("data", keep);
  child.stderr?.removeAllListeners("data").on("data", keep);

  return { url: `http://${host}:${port}`, port, pid: child.pid, output: () => output, stop };
}

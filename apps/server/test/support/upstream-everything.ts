import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { resolvePackagePlaceholders } from "../../src/runtimes/connect.ts";

export const EVERYTHING_ENTRY = resolvePackagePlaceholders(
  "{package:@modelcontextprotocol/server-everything}/dist/index.js",
);

export interface EverythingHttp {
  /** The Streamable HTTP endpoint (`/mcp`) on 127.0.0.1. */
  url: string;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

/** server-everything over Streamable HTTP in a child process (it binds all interfaces; we use 127.0.0.1). */
export async function startEverythingHttp(): Promise<EverythingHttp> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING_ENTRY, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`server-everything exited with ${child.exitCode}`);
    const up = await fetch(url, { method: "GET" }).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (attempt > 200) {
      await stop(child);
      throw new Error("server-everything did not start");
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url, close: () => stop(child) };
}

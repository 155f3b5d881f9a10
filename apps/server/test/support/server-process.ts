import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const SERVER_DIR = fileURLToPath(new URL("../..", import.meta.url));

export interface ServerProcess {
  url: string;
  child: ChildProcess;
}

/**
 * A real server process (`src/main.ts`) over the PostgreSQL database at `databaseUrl`, on a free 127.0.0.1 port;
 * resolves once it says where it listens. `secretKey` is its TOOLPLANE_SECRET_KEY (the same for replicas).
 */
export function startServerProcess(databaseUrl: string, secretKey: string): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: SERVER_DIR,
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: databaseUrl,
      TOOLPLANE_SECRET_KEY: secretKey,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      if (url) resolve({ url, child });
    });
    child.once("exit", (code) => reject(new Error(`server exited with ${code} before listening: ${out}`)));
  });
}

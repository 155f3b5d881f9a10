import { Console } from "node:console";
import { chmodSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { Logger } from "pino";
import { type CommandContext, runCommand } from "./commands.ts";

/**
 * The embedded database belongs to the server process while it runs, so the CLI cannot open it. The server then
 * listens on this unix socket in its data directory and runs CLI commands itself: owner-only (the socket is 0600
 * inside the 0700 data directory, so only the user the server runs as can connect), local only, one small JSON
 * request per command. PostgreSQL needs none of this: any number of processes share it.
 */
export const adminSocketPath = (dataDir: string) => join(dataDir, "admin.sock");

interface CommandRequest {
  argv: string[];
}
interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

const MAX_REQUEST_BYTES = 64 * 1024;

/** Serves CLI commands on the socket until `close`; a socket left by a process that died is replaced. */
export async function serveAdminSocket(path: string, context: CommandContext, logger: Logger): Promise<Server> {
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) {
      body += chunk;
      if (body.length > MAX_REQUEST_BYTES) return res.writeHead(413).end();
    }
    const argv = parseRequest(body);
    if (req.method !== "POST" || !argv) {
      return res.writeHead(400).end();
    }
    const stdout = collector();
    const stderr = collector();
    const out = new Console({ stdout: stdout.stream, stderr: stderr.stream });
    const opened = async () => ({ context, close: async () => {} });
    const code = await runCommand(argv, opened, out).catch((err: unknown) => {
      out.error(err instanceof Error ? err.message : String(err));
      return 1;
    });
    logger.info({ command: argv.slice(0, 2).join(" "), code }, "admin socket command");
    const result: CommandResult = { code, stdout: stdout.text(), stderr: stderr.text() };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
  });
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
  chmodSync(path, 0o600);
  return server;
}

/** Runs a CLI command in the server listening on the socket; resolves with what it printed and its exit status. */
export function runThroughAdminSocket(path: string, argv: string[]): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: path, method: "POST", path: "/" }, async (res) => {
      let body = "";
      for await (const chunk of res) body += chunk;
      if (res.statusCode !== 200) return reject(new Error(`the server's admin socket answered ${res.statusCode}`));
      resolve(JSON.parse(body) as CommandResult);
    });
    req.on("error", reject);
    req.end(JSON.stringify({ argv } satisfies CommandRequest));
  });
}

function parseRequest(body: string): string[] | undefined {
  try {
    const { argv } = JSON.parse(body) as Partial<CommandRequest>;
    return Array.isArray(argv) && argv.every((a) => typeof a === "string") ? argv : undefined;
  } catch {
    return undefined;
  }
}

function collector() {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk;
      done();
    },
  });
  return { stream, text: () => text };
}

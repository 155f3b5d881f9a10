import type { Client, Transport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { maskUrlCredentials } from "@toolplane/server-stubs";
import type { CatalogTool } from "../db/schema.ts";
import { createClient, createTransport, type UpstreamTarget } from "../runtimes/connect.ts";

/** A deployment failure with a stable code (see CustomProviderError in the spec); the message holds no secrets. */
export class ProbeError extends Error {
  constructor(
    readonly code: "upstream_unreachable" | "initialize_failed" | "tools_list_failed" | "process_exited" | "timeout",
    message: string,
  ) {
    super(message);
    this.name = "ProbeError";
  }
}

export interface ProbeOptions {
  /** Wall-clock limit for connecting plus initialize, and again for each later request. */
  timeoutMs: number;
  /** Aborting closes the connection (and ends a child process). */
  signal?: AbortSignal;
}

export interface UpstreamConnection {
  client: Client;
  close(): Promise<void>;
}

const STDERR_TAIL = 500;
const DETAIL_MAX = 300;

/** The endpoint as shown in messages: no query string or credentials, which may carry config secrets. */
function describe(target: UpstreamTarget): string {
  if (target.runtime.type === "stdio") return "the function process";
  const url = new URL(target.runtime.url);
  return `${url.origin}${url.pathname}`;
}

function detail(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })?.cause;
  const text = typeof cause?.code === "string" ? cause.code : error instanceof Error ? error.message : String(error);
  // An upstream's or fetch's message may quote the URL, credentials and all (stored ones predate their refusal).
  const masked = maskUrlCredentials(text);
  return masked.length > DETAIL_MAX ? `${masked.slice(0, DETAIL_MAX)}…` : masked;
}

/** Races `work` against the deadline and the abort signal; on either, `onCancel` tears the connection down. */
async function bounded<T>(work: Promise<T>, options: ProbeOptions, what: string, onCancel: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const cancelled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onCancel();
      reject(new ProbeError("timeout", `${what} did not finish within ${options.timeoutMs} ms.`));
    }, options.timeoutMs);
    onAbort = () => {
      onCancel();
      reject(new ProbeError("timeout", `${what} was cancelled.`));
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([work, cancelled]);
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener("abort", onAbort);
  }
}

/** How long a child that exited may still take to deliver what it wrote to stderr. */
const STDERR_GRACE_MS = 500;

function transportFor(target: UpstreamTarget): { transport: Transport; stderrTail: () => Promise<string> } {
  const transport = createTransport(target, "pipe");
  let tail = "";
  let ended: Promise<unknown> = Promise.resolve();
  if (transport instanceof StdioClientTransport && transport.stderr) {
    const stderr = transport.stderr;
    stderr.on("data", (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-STDERR_TAIL);
    });
    ended = new Promise((resolve) => stderr.once("end", resolve));
  }
  // The client may learn of the exit before the pipe has delivered the child's last words.
  const stderrTail = async () => {
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, STDERR_GRACE_MS))]);
    return tail.trim();
  };
  return { transport, stderrTail };
}

/** Connects and runs `initialize`; failures become ProbeErrors with a code saying which step failed. */
export async function connectUpstream(target: UpstreamTarget, options: ProbeOptions): Promise<UpstreamConnection> {
  const { transport, stderrTail } = transportFor(target);
  const client = createClient(target, "toolplane-deploy-probe");
  let exited = false;
  transport.onclose = () => {
    exited = true;
  };
  const close = () => client.close().catch(() => undefined);
  try {
    await bounded(client.connect(transport, { timeout: options.timeoutMs }), options, "initialize", () => void close());
  } catch (error) {
    await close();
    if (error instanceof ProbeError) throw error;
    const where = describe(target);
    if (target.runtime.type === "stdio" && (exited || (error as { code?: unknown }).code === "ENOENT")) {
      const stderr = await stderrTail();
      throw new ProbeError(
        "process_exited",
        `${where} exited before answering initialize${stderr ? `; its stderr ended with: ${stderr}` : "."}`,
      );
    }
    if (error instanceof TypeError || (error as { cause?: unknown }).cause instanceof Error) {
      throw new ProbeError("upstream_unreachable", `Could not connect to ${where}: ${detail(error)}.`);
    }
    throw new ProbeError("initialize_failed", `${where} did not answer initialize: ${detail(error)}.`);
  }
  return { client, close };
}

/** Connect, initialize, tools/list, close: what deploying a version checks and records. */
export async function probe(target: UpstreamTarget, options: ProbeOptions): Promise<{ tools: CatalogTool[] }> {
  const connection = await connectUpstream(target, options);
  try {
    const listed = await bounded(
      connection.client.listTools(undefined, { timeout: options.timeoutMs }),
      options,
      "tools/list",
      () => void connection.close(),
    ).catch((error: unknown) => {
      if (error instanceof ProbeError) throw error;
      throw new ProbeError("tools_list_failed", `${describe(target)} did not answer tools/list: ${detail(error)}.`);
    });
    return {
      tools: listed.tools.map((t) => (t.description ? { name: t.name, description: t.description } : { name: t.name })),
    };
  } finally {
    await connection.close();
  }
}

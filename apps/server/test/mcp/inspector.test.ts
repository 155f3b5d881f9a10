/**
 * The MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12), a client nobody here wrote, asks server-everything
 * the same questions directly and through a one-provider session: a one-provider session is transparent (the
 * upstream's own names and URIs), so the answers must be identical.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type McpTools, mcpTools, run } from "../support/mcp-tools.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { type EverythingHttp, startEverythingHttp } from "../support/upstream-everything.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  remoteProvider,
} from "./gateway-fixtures.ts";

let tools: McpTools;
let t: StartedTestServer;
let everything: EverythingHttp;
let session: CreatedSession;

beforeAll(async () => {
  [tools, t, everything] = await Promise.all([mcpTools(), startTestServer(), startEverythingHttp()]);
  const provider = await remoteProvider(t.db, "everything-http", everything.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Everything");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
}, 600_000);

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([everything?.close(), t?.close()]);
});

/** One Inspector CLI run (`--cli <url> --transport http …`); its stdout is the JSON result. */
async function inspect(url: string, args: string[], headers: string[] = []): Promise<unknown> {
  const { stdout } = await run(
    tools.node,
    [tools.inspector, "--cli", url, "--transport", "http", ...args, ...headers],
    {
      timeoutMs: 60_000,
    },
  );
  return JSON.parse(stdout);
}

/** The same Inspector run directly against server-everything and through the session (with its bearer secret). */
const both = (args: string[]) =>
  Promise.all([
    inspect(everything.url, args),
    inspect(endpointOf(t, session).toString(), args, ["--header", `Authorization: Bearer ${session.secret}`]),
  ]);

/**
 * An answer without the clock time server-everything writes into its dynamic resources ("created at 9:36:09 AM"):
 * two runs a second apart differ there and nowhere else.
 */
const withoutClock = (answer: unknown) =>
  JSON.parse(JSON.stringify(answer).replace(/created at \d{1,2}:\d{2}:\d{2}\s?[AP]M/g, "created at <time>"));

describe("the Inspector CLI gets the same answers through a one-provider session as directly", () => {
  it.each([
    ["tools/list", "tools"],
    ["resources/list", "resources"],
    ["resources/templates/list", "resourceTemplates"],
    ["prompts/list", "prompts"],
  ])("%s", async (method, key) => {
    const [direct, proxied] = await both(["--method", method]);
    // Not empty: identical empty answers would prove nothing.
    expect((direct as Record<string, unknown[]>)[key]?.length).toBeGreaterThan(0);
    expect(proxied).toEqual(direct);
  });

  it("tools/call", async () => {
    const [direct, proxied] = await both(["--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hi"]);
    expect(direct).toEqual({ content: [{ type: "text", text: "Echo: hi" }] });
    expect(proxied).toEqual(direct);
  });

  it.each([
    ["a static resource", "demo://resource/static/document/architecture.md"],
    ["a resource of a template", "demo://resource/dynamic/text/7"],
  ])("resources/read of %s", async (_what, uri) => {
    const [direct, proxied] = await both(["--method", "resources/read", "--uri", uri]);
    expect((direct as { contents: { uri: string }[] }).contents[0]?.uri).toBe(uri);
    expect(withoutClock(proxied)).toEqual(withoutClock(direct));
  });

  it("prompts/get with arguments, and one that embeds a resource", async () => {
    for (const args of [
      ["--prompt-name", "args-prompt", "--prompt-args", "city=Lisbon", "state=none"],
      ["--prompt-name", "resource-prompt", "--prompt-args", "resourceType=Text", "resourceId=3"],
    ]) {
      const [direct, proxied] = await both(["--method", "prompts/get", ...args]);
      expect((direct as { messages: unknown[] }).messages.length).toBeGreaterThan(0);
      expect(withoutClock(proxied)).toEqual(withoutClock(direct));
    }
  });
});

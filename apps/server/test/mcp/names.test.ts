/**
 * Keys and URIs a client cannot tell from its servers' (see Namespaces): a one-provider session shows the upstream's
 * names as they are, and with several providers two tools or prompts never share a key, whatever their names. Real
 * upstreams (test/support/upstream-names.ts) and the official clients of both eras (SDK v1 for 2025, SDK v2 pinned to
 * 2026-07-28).
 */
import type { Client as ModernClient } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import {
  ALIKE_NAMES,
  LONG_NAMES,
  type NamesUpstream,
  SHARED_WEB_URI,
  startNamesUpstream,
} from "../support/upstream-names.ts";
import {
  type CreatedSession,
  connectMcp,
  connectModernMcp,
  createSession,
  deploymentRef,
  deployProvider,
  firstText,
  remoteProvider,
} from "./gateway-fixtures.ts";

const TOOL_NAMES = ["files.read", ...ALIKE_NAMES, ...LONG_NAMES, "touch"];
const WHO = ["alpha", "beta"];

let t: StartedTestServer;
let upstreams: NamesUpstream[];
let one: CreatedSession;
let two: CreatedSession;
let filtered: CreatedSession;
const closers: (() => Promise<void>)[] = [];

type AnyClient = Pick<
  Client,
  | "listTools"
  | "callTool"
  | "listPrompts"
  | "getPrompt"
  | "complete"
  | "listResources"
  | "listResourceTemplates"
  | "readResource"
>;
const eras: [string, (session: CreatedSession) => Promise<AnyClient>][] = [
  ["2025 (SDK v1)", legacyClient],
  ["2026-07-28 (SDK v2)", (session) => modernClient(session) as unknown as Promise<AnyClient>],
];

async function legacyClient(session: CreatedSession): Promise<Client> {
  const client = await connectMcp(t, session);
  closers.push(() => client.close());
  return client;
}

async function modernClient(session: CreatedSession): Promise<ModernClient> {
  const client = await connectModernMcp(t, session);
  closers.push(() => client.close());
  return client;
}

const readText = async (client: AnyClient, uri: string) =>
  ((await client.readResource({ uri })).contents[0] as { text?: string } | undefined)?.text;
/** The upstream behind a URI of the test: the one its text names. */
const whoseUri = (uri: string) => (uri.includes("alpha") ? "alpha" : "beta");

const promptText = (result: { messages: { content: unknown }[] }) =>
  (result.messages[0]?.content as { text?: string } | undefined)?.text;

beforeAll(async () => {
  [t, ...upstreams] = await Promise.all([startTestServer(), ...WHO.map(startNamesUpstream)]);
  const deployments: string[] = [];
  for (const [i, who] of WHO.entries()) {
    const provider = await remoteProvider(t.db, who, upstreams[i]?.url ?? "");
    deployments.push((await deployProvider(t.client, provider.providerId, who)).id);
  }
  const [alpha = "", beta = ""] = deployments;
  one = await createSession(t.client, [{ provider_deployment: deploymentRef(alpha) }]);
  two = await createSession(t.client, [
    { provider_deployment: deploymentRef(alpha) },
    { provider_deployment: deploymentRef(beta) },
  ]);
  // `files_read` is the key `files.read` had before keys kept `.`; `a/b` is an upstream name.
  filtered = await createSession(t.client, [
    { provider_deployment: deploymentRef(alpha), tool_filters: { tool_keys: ["files_read", "a/b"] } },
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await Promise.all(upstreams.map((u) => u.close()));
  await t.close();
});

describe.each(eras)("tool and prompt keys, for a %s client", (_era, connect) => {
  it("are the upstream's own names in a one-provider session, and each call reaches its own tool", async () => {
    const client = await connect(one);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const name of TOOL_NAMES) expect(firstText(await client.callTool({ name }))).toBe(`alpha:${name}`);
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name).sort()).toEqual([...ALIKE_NAMES].sort());
  });

  it("tell apart every tool and prompt of several providers, names alike once made safe included", async () => {
    const client = await connect(two);
    const { tools } = await client.listTools();
    const keys = tools.map((tool) => tool.name);
    expect(new Set(keys).size).toBe(WHO.length * TOOL_NAMES.length);
    expect(keys).toEqual(expect.arrayContaining(["alpha_files.read", "beta_a.b"]));
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_.-]{1,60}$/);
    // Every key reaches a tool of its own: together they reach every tool of both upstreams.
    const reached = await Promise.all(keys.map(async (name) => firstText(await client.callTool({ name }))));
    expect(reached.sort()).toEqual(WHO.flatMap((who) => TOOL_NAMES.map((name) => `${who}:${name}`)).sort());

    const { prompts } = await client.listPrompts();
    const got = await Promise.all(prompts.map(async ({ name }) => promptText(await client.getPrompt({ name }))));
    const completed = await Promise.all(
      prompts.map(async ({ name }) => {
        const ref = { type: "ref/prompt" as const, name };
        return (await client.complete({ ref, argument: { name: "topic", value: "" } })).completion.values[0];
      }),
    );
    const expected = WHO.flatMap((who) => ALIKE_NAMES.map((name) => `${who}:${name}`)).sort();
    expect(got.sort()).toEqual(expected);
    expect(completed.sort()).toEqual(expected);
  });

  it("keep a tool filter's key from before keys kept `.`, beside upstream names", async () => {
    const client = await connect(filtered);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(["a/b", "files.read"]);
    expect(firstText(await client.callTool({ name: "files.read" }))).toBe("alpha:files.read");
  });
});

describe.each(eras)("resource URIs, for a %s client", (_era, connect) => {
  it("leave a web URI as it is unless two providers list it, and read each from its own provider", async () => {
    const client = await connect(two);
    const uris = (await client.listResources()).resources.map((resource) => resource.uri);
    expect(uris.sort()).toEqual(
      [
        "https://example.test/alpha/doc",
        "https://example.test/beta/doc",
        "alpha+notes://alpha/1",
        "beta+notes://beta/1",
        `alpha+${SHARED_WEB_URI}`,
        `beta+${SHARED_WEB_URI}`,
      ].sort(),
    );
    for (const uri of uris) {
      expect(await readText(client, uri)).toBe(`${whoseUri(uri)} read ${uri.replace(/^(alpha|beta)\+/, "")}`);
    }
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate);
    expect(templates.sort()).toEqual(
      [
        "https://example.test/alpha/{id}",
        "https://example.test/beta/{id}",
        "alpha+notes://alpha/items/{id}",
        "beta+notes://beta/items/{id}",
      ].sort(),
    );
    expect(await readText(client, "https://example.test/beta/42")).toBe("beta read https://example.test/beta/42");
  });

  it("read an upstream's own URI that one provider lists, or a template of, and name the choices when two do", async () => {
    const client = await connect(two);
    expect(await readText(client, "notes://beta/1")).toBe("beta read notes://beta/1");
    expect(await readText(client, "notes://alpha/items/7")).toBe("alpha read notes://alpha/items/7");
    const ref = { type: "ref/resource" as const, uri: "notes://alpha/items/{id}" };
    const completed = await client.complete({ ref, argument: { name: "id", value: "" } });
    expect(completed.completion.values).toEqual([`alpha:${ref.uri}`]);
    await expect(client.readResource({ uri: SHARED_WEB_URI })).rejects.toThrow(`alpha+${SHARED_WEB_URI}`);
    await expect(client.readResource({ uri: "notes://gamma/1" })).rejects.toThrow(/not offered/);
  });
});

describe("resource updates of a URI subscribed as the upstream gave it", () => {
  it("reach a 2025 client that subscribed with resources/subscribe", async () => {
    const client = await legacyClient(two);
    const heard = new Promise<string>((resolve) => {
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (notification) => {
        resolve(notification.params.uri);
      });
    });
    await client.subscribeResource({ uri: "notes://alpha/1" });
    await client.callTool({ name: "alpha_touch", arguments: {} });
    expect(await heard).toBe("notes://alpha/1");
  });

  it("reach a 2026-07-28 client that listens with subscriptions/listen", async () => {
    const client = await modernClient(two);
    const heard = new Promise<string>((resolve) => {
      client.setNotificationHandler("notifications/resources/updated", async (notification) => {
        resolve(notification.params.uri);
      });
    });
    const subscription = await client.listen({ resourceSubscriptions: ["notes://beta/1"] });
    await client.callTool({ name: "beta_touch", arguments: {} });
    expect(await heard).toBe("notes://beta/1");
    await subscription.close();
  });
});

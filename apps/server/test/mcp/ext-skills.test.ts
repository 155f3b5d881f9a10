/**
 * The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640; ext-skills specification/stable/skills.mdx)
 * through a session: a host using the SDK v2's SkillsClient lists, gets and reads the skills of every provider
 * that serves them as one server's, each file verified against its entry's digest, in either client era.
 */
import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { SKILLS_EXTENSION_ID, type Skill, SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";
import { type SkillsUpstream, startSkillsUpstream } from "../support/upstream-skills.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  remoteProvider,
} from "./gateway-fixtures.ts";

let t: StartedTestServer;
let alpha: SkillsUpstream;
let beta: SkillsUpstream;
let plain: ModernUpstream;
/**
 * alpha, beta (both serve `skill://git-workflow/…`) and plain (declares the extension without directory reads, and
 * answers skills/list with no skills): URIs are prefixed per provider.
 */
let session: CreatedSession;
/** alpha alone: its URIs as it gives them. */
let alphaOnly: CreatedSession;
const clients: Client[] = [];

beforeAll(async () => {
  [t, alpha, beta, plain] = await Promise.all([
    startTestServer(),
    startSkillsUpstream("alpha"),
    startSkillsUpstream("beta"),
    startModernUpstream({ extensions: { [SKILLS_EXTENSION_ID]: { directoryRead: false } } }),
  ]);
  const deployments = await Promise.all(
    Object.entries({ alpha: alpha.url, beta: beta.url, plain: plain.url }).map(async ([slug, url]) => {
      const provider = await remoteProvider(t.db, slug, url);
      return (await deployProvider(t.client, provider.providerId, slug)).id;
    }),
  );
  session = await createSession(
    t.client,
    deployments.map((id) => ({ provider_deployment: deploymentRef(id) })),
  );
  alphaOnly = await createSession(t.client, [{ provider_deployment: deploymentRef(deployments[0] ?? "") }]);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await upstreams.closeAll();
  await Promise.all([alpha?.close(), beta?.close(), plain?.close(), t?.close()]);
});

const ERAS = [
  ["2026-07-28", { versionNegotiation: { mode: { pin: "2026-07-28" } } }],
  ["2025-11-25", { versionNegotiation: { mode: "legacy" } }],
] as const;

/** A host's skills client (SDK v2) of `to`'s endpoint, in the era `options` choose. */
async function skillsOf(to: CreatedSession, options: (typeof ERAS)[number][1]): Promise<SkillsClient> {
  const client = new Client({ name: "skills-host", version: "1.0.0" }, options as never);
  const requestInit = { headers: { authorization: `Bearer ${to.secret}` } };
  await client.connect(new StreamableHTTPClientTransport(endpointOf(t, to), { requestInit }));
  clients.push(client);
  return new SkillsClient(client);
}

const named = (skills: Skill[], name: string) => skills.filter((skill) => skill.frontmatter.name === name);

describe.each(ERAS)("a %s host", (era, options) => {
  it("sees the extension, with directory reads since one provider offers them", async () => {
    const skills = await skillsOf(session, options);
    expect(skills.supported).toBe(true);
    expect(skills.directoryRead).toBe(true);
  });

  it("lists every provider's skills as one server's, same-URI skills of two providers kept apart", async () => {
    // skills.mdx "Skill URIs": two servers can both serve skill://refunds/SKILL.md, and those are unrelated skills.
    const listing = await (await skillsOf(session, options)).list();
    expect(listing.invalid).toEqual([]);
    const uris = listing.skills.map((skill) => skill.uri);
    expect(new Set(uris).size).toBe(4);
    expect(named(listing.skills, "git-workflow")).toHaveLength(2);
    expect(named(listing.skills, "alpha-only")).toHaveLength(1);
    expect(named(listing.skills, "beta-only")).toHaveLength(1);
    for (const uri of uris) expect(uri).toMatch(/^(alpha|beta)\+skill:\/\/.*\/SKILL\.md$/);
    // skills.mdx "Listing Skills": ttlMs and cacheScope are required on 2026-07-28. plain's page gave none: the
    // merged listing is not to be cached.
    if (era === "2026-07-28") expect(listing).toMatchObject({ ttlMs: 0, cacheScope: "private" });
  });

  it("reads each provider's files by the session's URIs, verified against their entries", async () => {
    const skills = await skillsOf(session, options);
    const listing = await skills.list();
    const texts = await Promise.all(
      named(listing.skills, "git-workflow").map(async (skill) => {
        const guide = await skills.read(skill, "references/GUIDE.md");
        const main = await skills.read(skill);
        expect([guide.verified, main.verified]).toEqual([true, true]);
        expect(main.frontmatter).toEqual(skill.frontmatter);
        return { uri: skill.uri, guide: guide.text, body: main.body };
      }),
    );
    const of = (who: string) => texts.find((text) => text.uri.startsWith(`${who}+`));
    expect(of("alpha")).toMatchObject({ guide: "# Guide of alpha\n", body: expect.stringContaining("by alpha") });
    expect(of("beta")).toMatchObject({ guide: "# Guide of beta\n", body: expect.stringContaining("by beta") });
  });

  it("gets one skill by its session URI, listed or not, and refuses a URI no provider serves", async () => {
    const skills = await skillsOf(session, options);
    const listing = await skills.list();
    const [beta] = named(listing.skills, "beta-only");
    const got = await skills.get(beta?.uri ?? "");
    expect(got.skill).toEqual(beta);
    // skills.mdx "Getting a Skill": a URI that names no skill the server serves is -32602 (Invalid params).
    const unknown = await skills.get("beta+skill://nothing-here/SKILL.md").catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(ProtocolError);
    expect((unknown as ProtocolError).code).toBe(-32602);
  });

  it("reads a skill's directory, its children named by the session's URIs", async () => {
    const skills = await skillsOf(session, options);
    const [gitOfBeta] = named(await skills.list().then((l) => l.skills), "git-workflow").filter((skill) =>
      skill.uri.startsWith("beta+"),
    );
    const root = (gitOfBeta?.uri ?? "").replace(/\/SKILL\.md$/, "");
    const { resources } = await skills.readDirectory(root);
    expect(resources.map((r) => r.uri).sort()).toEqual([`${root}/SKILL.md`, `${root}/references`]);
  });

  it("refuses a directory read of a provider that declared none, without asking it", async () => {
    const refused = await (await skillsOf(session, options))
      .readDirectory("plain+memo://today")
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProtocolError);
    expect(refused).toMatchObject({
      code: -32602,
      message: expect.stringContaining("plain does not read directories"),
    });
    expect(plain.extensionCalls).not.toContain("resources/directory/read");
  });
});

describe("a session of one provider", () => {
  it("gives the provider's skill URIs and cache fields as they are", async () => {
    const listing = await (await skillsOf(alphaOnly, ERAS[0][1])).list();
    // The time to live counts down from when the provider answered (the gateway is a cache on the way).
    expect(listing).toMatchObject({ ttlMs: expect.any(Number), cacheScope: "public" });
    expect(listing.ttlMs).toBeGreaterThan(50_000);
    expect(listing.ttlMs).toBeLessThanOrEqual(60_000);
    expect(listing.skills.map((skill) => skill.uri).sort()).toEqual([
      "skill://alpha/alpha-only/SKILL.md",
      "skill://git-workflow/SKILL.md",
    ]);
  });
});

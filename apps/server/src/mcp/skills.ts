import {
  RESOURCES_DIRECTORY_READ_METHOD,
  SKILLS_EXTENSION_ID,
  SKILLS_GET_METHOD,
} from "@modelcontextprotocol/server/ext/skills";
import { cacheFields, type Freshness, freshnessOf, mergedFreshness, STALE } from "../lib/freshness.ts";
import type { Upstream } from "../runtimes/pool.ts";
import { asFailure, FirstAnswer, type Gateway, type ProviderFailure } from "./gateway.ts";
import type { GatewaySession, GatewaySessionProvider } from "./gateway-session.ts";

type Params = Record<string, unknown>;

/**
 * The MCP Skills extension (`io.modelcontextprotocol/skills`, SEP-2640; ext-skills specification/stable/skills.mdx)
 * through a session of several providers. A skill is named by the URI of its SKILL.md and its files are resources,
 * so the session's URIs (made unique per provider, see Namespaces) name skills too: `skills/list` merges every
 * provider's entries under them, and the methods that take a URI go to the provider it names, as resources/read
 * does. Digests cover the files' bytes, not their URIs, so entries stay verifiable.
 */

/** The extension's methods that name a skill or a directory by its URI (skills.mdx "Getting a Skill", "Reading Directories"). */
export const SKILL_URI_METHODS = new Set<string>([SKILLS_GET_METHOD, RESOURCES_DIRECTORY_READ_METHOD]);

/** Pages of one provider's `skills/list` walked at most: a server that keeps giving cursors is cut off there. */
const MAX_PAGES = 100;

/** Sends a request to one provider's upstream on behalf of the client (its progress, cancellation, level). */
export type SendToProvider = (
  provider: GatewaySessionProvider,
  upstream: Upstream,
  method: string,
  params: Params,
) => Promise<Params>;

/** The extension's settings an upstream declared, or undefined when it serves no skills. */
export function skillsOffered(capabilities: Params): Params | undefined {
  const offered = (capabilities.extensions as Params | undefined)?.[SKILLS_EXTENSION_ID];
  return offered && typeof offered === "object" ? (offered as Params) : undefined;
}

/**
 * Every skill of the providers that serve them, as one listing under the session's URIs. Each provider's pages are
 * walked (a listing may be partial, skills.mdx "Listing Skills"); one that has not answered within the list
 * timeout, once another has, is left out and named in `failures`, as in the session's other listings. The result
 * may be cached as long as the shortest-lived page says, and only privately if any page says so.
 */
export async function listSkills(
  gateway: Gateway,
  session: GatewaySession,
  described: Awaited<ReturnType<Gateway["describe"]>>,
  send: SendToProvider,
): Promise<{ result: Params; failures: ProviderFailure[] }> {
  const names = gateway.namespaces(session);
  const failures: ProviderFailure[] = [];
  const hints: Freshness[] = [];
  const race = new FirstAnswer();
  const walk = async (provider: GatewaySessionProvider, upstream: Upstream) => {
    const skills: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await send(provider, upstream, "skills/list", cursor ? { cursor } : {});
      skills.push(...(Array.isArray(page.skills) ? page.skills : []));
      hints.push(freshnessOf(page, Date.now()));
      cursor = typeof page.nextCursor === "string" ? page.nextCursor : undefined;
    } while (cursor && ++pages < MAX_PAGES);
    return skills.map((skill) => exposeSkill(skill, (uri) => names.uri(provider.sessionProviderId, uri)));
  };
  const listed = await Promise.all(
    described
      .filter((d) => d.upstream && skillsOffered(d.capabilities as Params))
      .map(async ({ provider, upstream }) => {
        try {
          return await race.bound(walk(provider, upstream as Upstream), gateway.listMs);
        } catch (error) {
          failures.push({ provider, error: asFailure(error) });
          return [];
        }
      }),
  );
  const freshness = failures.length > 0 ? STALE : mergedFreshness(hints);
  return { result: { skills: listed.flat(), ...cacheFields(freshness) }, failures };
}

/**
 * Why the provider a skill URI names cannot answer `method` (it declared no skills, or no directory reads), or
 * undefined when it can: the session declares what any of its providers does, so a request may reach one that
 * does not.
 */
export function skillRefusal(method: string, provider: GatewaySessionProvider, capabilities: Params) {
  const offered = skillsOffered(capabilities);
  if (!offered) return `Provider ${provider.providerSlug} serves no skills.`;
  if (method === RESOURCES_DIRECTORY_READ_METHOD && offered.directoryRead !== true)
    return `Provider ${provider.providerSlug} does not read directories.`;
  return undefined;
}

/** A skills/get or resources/directory/read result with its URIs made session-wide by `expose`. */
export function exposeSkillResult(result: Params, expose: (uri: string) => string): Params {
  return {
    ...result,
    ...(result.skill ? { skill: exposeSkill(result.skill, expose) } : {}),
    ...(Array.isArray(result.resources) ? { resources: result.resources.map((r) => exposeUri(r, expose)) } : {}),
  };
}

/** A Skill entry under session-wide URIs: its own and each of its files' (a "dynamic" skill lists none). */
function exposeSkill(skill: unknown, expose: (uri: string) => string): unknown {
  const entry = exposeUri(skill, expose);
  if (!entry || typeof entry !== "object" || !Array.isArray((entry as Params).resources)) return entry;
  return { ...entry, resources: ((entry as Params).resources as unknown[]).map((r) => exposeUri(r, expose)) };
}

const exposeUri = (item: unknown, expose: (uri: string) => string): unknown =>
  item && typeof item === "object" && typeof (item as Params).uri === "string"
    ? { ...(item as Params), uri: expose((item as Params).uri as string) }
    : item;

import { createHash } from "node:crypto";

export const MAX_KEY_LENGTH = 60;
/** The scheme of MCP Apps UI resources (SEP-1865). */
const APP_SCHEME = "ui://";
/** A URI of the web, which MCP lets a client fetch directly (server/resources, common URI schemes). */
const WEB_URI = /^https?:\/\//i;
/** The characters MCP (2025-11-25, server/tools) allows in a tool name. */
const MCP_NAME = /^[A-Za-z0-9_.-]+$/;

const sanitize = (s: string) => s.replace(/[^a-zA-Z0-9_.-]/g, "_");
const shortHash = (s: string, length = 8) => createHash("sha256").update(s).digest("hex").slice(0, length);

/** Keeps a key within 60 characters: a longer one keeps its head and ends with a hash of the whole. */
function withinLimit(key: string, limit: number): string {
  if (key.length <= limit) return key;
  return `${key.slice(0, limit - 9)}_${shortHash(key)}`;
}

/**
 * An upstream's name as the part of a key after the prefix: the name itself when MCP allows it and it fits in a
 * key; else made safe, cut to fit, and ended with a hash of the name as it was, so that two names of one provider
 * never share a key (`a.b` stays, `a/b` is `a_b_<hash>`; two long names with the same head end differently).
 */
function ownPart(name: string): string {
  if (MCP_NAME.test(name) && name.length <= MAX_KEY_LENGTH) return name;
  return `${sanitize(name).slice(0, MAX_KEY_LENGTH - 9)}_${shortHash(name)}`;
}

export interface Namespaced {
  /** The session provider (`spv_…`). */
  id: string;
  slug: string;
}

/**
 * How a session's keys and URIs say which provider they belong to. Derived from the session's configured providers
 * alone (never from which upstreams answer right now), so a key stays the same while upstreams come and go:
 * - a session with one provider is transparent: tool and prompt keys are the upstream's names as it gives them (even
 *   names MCP does not allow, or longer than 60 characters: the client sees what it would see of the server itself),
 *   resource URIs are the upstream's own;
 * - with several, every key is `<slug>_<name>`: at most 60 characters, of the characters MCP allows in a tool name,
 *   and one name's alone (a name changed to fit ends with a hash of itself, see ownPart), so two tools or prompts
 *   of a provider never share one; every URI `<slug>+<uri>` (`ui://<slug>+<rest>` for an MCP
 *   Apps UI resource; reversible: the provider is found by its prefix, the upstream's URI is what follows), except
 *   an `http(s)://` URI: MCP lets a client fetch those from the web itself, so they stay as they are (the gateway
 *   finds the provider that lists one when it is read; one that two providers list is given each one's prefix in
 *   the lists, see Gateway.list). Task ids are made session-wide as URIs are, always prefixed. A slug
 *   used by two providers of the session (the same provider deployed twice) is numbered in the order of the session
 *   provider ids: `<slug>`, `<slug>2`, … (a number another provider's slug already ends with is skipped).
 */
export class Namespaces {
  private readonly prefixes: Map<string, string>;

  constructor(providers: Namespaced[]) {
    // Every slug is its own provider's prefix first; a repeated one is numbered past the prefixes already taken,
    // so that `github`, `github`, `github2` are `github`, `github3`, `github2` and never two `github2`.
    const taken = new Set(providers.map((p) => sanitize(p.slug)));
    const first = new Set<string>();
    this.prefixes = new Map(
      providers.map((p) => {
        if (providers.length === 1) return [p.id, ""];
        const slug = sanitize(p.slug);
        if (!first.has(slug)) {
          first.add(slug);
          return [p.id, slug];
        }
        let n = 2;
        while (taken.has(`${slug}${n}`)) n++;
        taken.add(`${slug}${n}`);
        return [p.id, `${slug}${n}`];
      }),
    );
  }

  /**
   * The session-wide key of a tool or prompt. With several providers: at most 60 characters, and the upstream's
   * own name is never cut for the prefix (a long slug gives way to a short hash of itself first).
   */
  key(providerId: string, name: string): string {
    const prefix = this.prefixes.get(providerId) ?? "";
    if (!prefix) return name;
    const own = ownPart(name);
    if (prefix.length + 1 + own.length <= MAX_KEY_LENGTH) return `${prefix}_${own}`;
    const room = MAX_KEY_LENGTH - own.length - 1;
    if (room >= 8) return `${prefix.slice(0, room - 7)}~${shortHash(prefix, 6)}_${own}`;
    return `${shortHash(prefix, 6)}_${withinLimit(own, MAX_KEY_LENGTH - 7)}`;
  }

  /**
   * The key a tool of a short name had before keys kept `.` and told apart names made alike (2026-11-25): every
   * character outside `A-Z a-z 0-9 _ -` made `_`, even with one provider. A tool filter written then may name it.
   */
  formerKey(providerId: string, name: string): string {
    const prefix = this.prefixes.get(providerId) ?? "";
    const own = name.replace(/[^a-zA-Z0-9_-]/g, "_");
    return prefix ? `${prefix}_${own}` : own;
  }

  /** The providers a key can belong to (by its prefix): the only upstreams worth asking about it. */
  candidates(key: string): string[] {
    return [...this.prefixes].filter(([id]) => this.couldOwn(id, key)).map(([id]) => id);
  }

  private couldOwn(providerId: string, key: string): boolean {
    const prefix = this.prefixes.get(providerId) ?? "";
    if (!prefix) return true;
    const hash = shortHash(prefix, 6);
    return key.startsWith(`${prefix}_`) || key.includes(`~${hash}_`) || key.startsWith(`${hash}_`);
  }

  /** The URI a client sees for an upstream's resource URI (or URI template): a web URI as it is, else qualified. */
  uri(providerId: string, uri: string): string {
    return WEB_URI.test(uri) ? uri : this.qualified(providerId, uri);
  }

  /**
   * An upstream's URI (or task id) with its provider's prefix, whatever it is. An MCP Apps UI resource keeps its
   * `ui://` scheme, by which hosts know it: the prefix goes inside it (`ui://<slug>+<rest>`).
   */
  qualified(providerId: string, uri: string): string {
    const scheme = this.uriScheme(providerId);
    if (!scheme) return uri;
    if (uri.startsWith(APP_SCHEME)) return `${APP_SCHEME}${scheme}+${uri.slice(APP_SCHEME.length)}`;
    return `${scheme}+${uri}`;
  }

  /**
   * The URI under which an update of an upstream's resource `uri` reaches a client that subscribed to `subscribed`
   * (URIs as that client gave them, of this provider): the form it subscribed with (the session-wide URI, the
   * qualified one of a web URI two providers list, or the upstream's own that one provider lists), of the resource
   * itself or of one it is a sub-resource of; undefined when it reaches none of them.
   */
  updatedUri(providerId: string, uri: string, subscribed: Iterable<string>): string | undefined {
    const held = [...subscribed];
    const forms = new Set([this.uri(providerId, uri), this.qualified(providerId, uri), uri]);
    return [...forms].find((form) => held.some((one) => reachesSubscription(form, one)));
  }

  /**
   * The provider and upstream URI (or task id) behind a qualified one the client sent, or null when no provider's
   * prefix begins it (with several providers: an upstream's own URI, which only the lists can tell the owner of).
   */
  resolveUri(uri: string): { providerId: string; uri: string } | null {
    for (const id of this.prefixes.keys()) {
      const scheme = this.uriScheme(id);
      if (!scheme) return { providerId: id, uri };
      if (uri.startsWith(`${APP_SCHEME}${scheme}+`)) {
        return { providerId: id, uri: APP_SCHEME + uri.slice(APP_SCHEME.length + scheme.length + 1) };
      }
      if (uri.startsWith(`${scheme}+`)) return { providerId: id, uri: uri.slice(scheme.length + 1) };
    }
    return null;
  }

  /** A URI scheme prefix must start with a letter and hold only letters, digits, `+`, `-` and `.`. */
  private uriScheme(providerId: string): string {
    const prefix = (this.prefixes.get(providerId) ?? "").toLowerCase().replace(/[^a-z0-9.-]/g, "-");
    return prefix && !/^[a-z]/.test(prefix) ? `p${prefix}` : prefix;
  }
}

/**
 * Whether an update of resource `updated` reaches a subscription to `subscribed` (both as one namespace names them):
 * the same URI, or one of its sub-resources, which MCP lets a server announce ("This might be a sub-resource of the
 * one that the client actually subscribed to": ResourceUpdatedNotificationParams.uri, 2025-11-25 and 2026-07-28).
 * MCP does not define sub-resource further: taken here as what lies below the URI in its hierarchy (RFC 3986 path
 * segments: `file:///project` → `file:///project/src/a.ts`) or a fragment of it (RFC 3986 §3.5: a secondary
 * resource). A URI that merely starts with the same characters (`file:///project2`) is another resource.
 */
export function reachesSubscription(updated: string, subscribed: string): boolean {
  if (updated === subscribed) return true;
  if (!updated.startsWith(subscribed)) return false;
  const next = updated[subscribed.length];
  return subscribed.endsWith("/") || next === "/" || next === "#";
}

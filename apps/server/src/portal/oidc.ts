import { ApiError } from "@toolplane/server-stubs";
import type { Request } from "express";
import * as client from "openid-client";
import type { Row } from "../db/schema.ts";
import type { PortalConsumerService, SignedIn } from "../resources/portal-consumers/service.ts";
import type { PortalOidcSettings, PortalService } from "../resources/portals/service.ts";
import { OIDC_COOKIE, readCookie } from "./cookies.ts";

/** What the browser keeps between the redirect to the provider and the callback. */
interface PendingSignIn {
  state: string;
  nonce: string;
  verifier: string;
}

const denied = (message: string) => new ApiError("forbidden", message, { entity: "portal.consumer" });

/**
 * Consumer sign-in with the portal's OpenID Connect provider (openid-client): discovery, the authorization-code
 * flow with PKCE, `state` and `nonce`, ID token validation, and the groups claim mapped to consumer groups. The
 * pending request lives in an HttpOnly cookie scoped to the portal, so any replica can take the callback.
 */
export class OidcSignIn {
  readonly cookieName = OIDC_COOKIE;

  constructor(
    private readonly portals: PortalService,
    private readonly consumers: PortalConsumerService,
  ) {}

  async start(portal: Row<"portals">): Promise<{ location: string; cookie: { name: string; value: string } }> {
    const settings = this.settings(portal);
    const config = await this.configuration(settings);
    const pending: PendingSignIn = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri(portal),
      scope: settings.scopes.join(" "),
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: "S256",
      state: pending.state,
      nonce: pending.nonce,
    });
    return { location: url.href, cookie: { name: OIDC_COOKIE, value: JSON.stringify(pending) } };
  }

  /** Completes the callback: the consumer signed in, or a refusal (denied group, revoked consumer, bad response). */
  async finish(portal: Row<"portals">, currentUrl: URL, req: Request): Promise<SignedIn> {
    const settings = this.settings(portal);
    const pending = parsePending(readCookie(req, OIDC_COOKIE));
    if (!pending) {
      throw new ApiError("bad_request", "The sign-in took too long or was started in another browser. Sign in again.");
    }
    const providerError = currentUrl.searchParams.get("error");
    if (providerError) {
      throw denied(`The identity provider refused the sign-in (${providerError.slice(0, 100)}).`);
    }
    const config = await this.configuration(settings);
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      // The callback URL as the provider was told it, whatever the proxy in front of us rewrote.
      const callback = new URL(this.redirectUri(portal));
      callback.search = currentUrl.search;
      tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      req.log.info({ err: (err as Error).message }, "portal OIDC callback refused");
      throw new ApiError("bad_request", "The sign-in could not be completed. Sign in again.");
    }
    const claims = tokens.claims();
    if (!claims) throw new ApiError("bad_request", "The identity provider sent no ID token.");
    let groupsValue: unknown = claims[settings.groupsClaim];
    let profile: Record<string, unknown> = claims;
    if (groupsValue === undefined && tokens.access_token) {
      profile = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
      groupsValue = profile[settings.groupsClaim];
    }
    const groups = mapGroups(groupsValue, settings);
    const identity = {
      method: "oidc" as const,
      identity: `${claims.iss} ${claims.sub}`,
      subject: claims.sub,
      name: typeof profile.name === "string" ? profile.name.slice(0, 255) : null,
      email: typeof profile.email === "string" ? profile.email.slice(0, 320) : null,
      groups,
    };
    if (!(await this.consumers.hasAnyAccess(portal.id, groups))) {
      await this.consumers.refreshGroups(portal.id, identity.identity, groups);
      throw denied(
        groups.length
          ? `Your groups (${groups.join(", ")}) have no access to this portal. Ask its owner for access.`
          : "Your account belongs to no group with access to this portal. Ask its owner for access.",
      );
    }
    return this.consumers.signIn(portal, identity);
  }

  private settings(portal: Row<"portals">): PortalOidcSettings {
    const settings = this.portals.oidcSettings(portal);
    if (!settings) throw new ApiError("not_found", "This portal has no single sign-on; use your invitation link.");
    return settings;
  }

  private redirectUri(portal: Row<"portals">): string {
    return `${this.portals.pageUrl(portal.id)}/sign-in/oidc/callback`;
  }

  private async configuration(settings: PortalOidcSettings): Promise<client.Configuration> {
    const issuer = new URL(settings.issuer);
    try {
      return await client.discovery(
        issuer,
        settings.clientId,
        settings.clientSecret ?? undefined,
        settings.clientSecret ? client.ClientSecretPost(settings.clientSecret) : client.None(),
        // The portal settings accept http only for loopback issuers (PortalService), for local providers.
        issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests], timeout: 10 } : { timeout: 10 },
      );
    } catch {
      throw new ApiError("bad_gateway", "The portal's identity provider cannot be reached right now. Try again later.");
    }
  }
}

function parsePending(value: string | undefined): PendingSignIn | null {
  if (!value) return null;
  try {
    const parsed = JSON.parse(value) as Partial<PendingSignIn>;
    return typeof parsed.state === "string" && typeof parsed.nonce === "string" && typeof parsed.verifier === "string"
      ? (parsed as PendingSignIn)
      : null;
  } catch {
    return null;
  }
}

/** The claim's values (a string or an array of strings) as consumer group ids, through the portal's mapping. */
function mapGroups(value: unknown, settings: PortalOidcSettings): string[] {
  const values = typeof value === "string" ? [value] : Array.isArray(value) ? value : [];
  const mapped = values
    .filter((v): v is string => typeof v === "string" && v.length > 0)
    .map((v) => settings.groupMapping.find((m) => m.claim_value === v)?.consumer_group_id ?? v)
    .filter((v) => v.length <= 64);
  return [...new Set(mapped)];
}

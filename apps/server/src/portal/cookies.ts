import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Request, Response } from "express";

/** The consumer's sign-in (a consumer session's secret). */
export const SESSION_COOKIE = "tp_portal_session";
/** A random value given to every visitor, so forms shown before sign-in have a CSRF token too. */
export const VISITOR_COOKIE = "tp_portal_visitor";
/** The OpenID Connect request in flight: state, nonce and PKCE verifier. */
export const OIDC_COOKIE = "tp_portal_oidc";

export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return decodeURIComponent(value.join("="));
  }
  return undefined;
}

/**
 * Sets a cookie scoped to one portal's pages: `HttpOnly` (no script reads it), `SameSite=Lax` (not sent on
 * cross-site POSTs), `Secure` when the public URL is https. `maxAge` 0 deletes it.
 */
export function setCookie(
  res: Response,
  portalPath: string,
  secure: boolean,
  name: string,
  value: string,
  maxAge: number,
) {
  res.append(
    "set-cookie",
    `${name}=${encodeURIComponent(value)}; Path=${portalPath}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`,
  );
}

/**
 * The CSRF token of a form: a digest of a cookie secret the page's own origin alone can read back. A forged form
 * on another site cannot know it, and it changes with every sign-in (so it is no use after sign-out).
 */
export const csrfToken = (cookieSecret: string) =>
  createHash("sha256").update(`csrf:${cookieSecret}`).digest("base64url");

export function csrfMatches(cookieSecret: string | undefined, sent: unknown): boolean {
  if (!cookieSecret || typeof sent !== "string") return false;
  const expected = Buffer.from(csrfToken(cookieSecret));
  const given = Buffer.from(sent);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export const randomSecret = () => randomBytes(32).toString("base64url");

import { createHash, randomBytes } from "node:crypto";
import type { CredentialData } from "../db/schema.ts";

export type Fetch = typeof fetch;

/** 32 random bytes, base64url: OAuth `state`, PKCE verifiers (43 chars, RFC 7636) and start-URL keys. */
export const randomToken = () => randomBytes(32).toString("base64url");

export const sha256Hex = (value: string) => createHash("sha256").update(value).digest("hex");

/** The PKCE S256 challenge of a verifier. */
export const s256Challenge = (verifier: string) => createHash("sha256").update(verifier).digest("base64url");

/** A token endpoint answer this server cannot use; `reason` is safe to show and store (no secrets). */
export class TokenEndpointError extends Error {
  constructor(
    readonly reason: string,
    /** The OAuth error code the endpoint gave (e.g. `invalid_grant`), or ours. */
    readonly code: string,
  ) {
    super(reason);
    this.name = "TokenEndpointError";
  }
}

const TOKEN_TIMEOUT_MS = 15_000;

/** OAuth error codes are ASCII words (RFC 6749 §5.2); anything else is not echoed back to users. */
const safeCode = (value: unknown) => (typeof value === "string" && /^[\w.-]{1,64}$/.test(value) ? value : undefined);

/**
 * Calls a token endpoint (authorization_code or refresh_token grant, client credentials in the body) and
 * returns the token set as stored credential data. A refresh answer without a new refresh token keeps
 * `previousRefreshToken` (RFC 6749 §6 lets the server keep the old one valid).
 */
export async function requestTokens(
  fetchImpl: Fetch,
  endpoint: string,
  params: Record<string, string>,
  options: { now: Date; previousRefreshToken?: string | null },
): Promise<Extract<CredentialData, { kind: "oauth" }>> {
  let res: Response;
  try {
    res = await fetchImpl(endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(params),
      redirect: "error",
      signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
    });
  } catch {
    throw new TokenEndpointError("The provider's token endpoint could not be reached.", "temporarily_unavailable");
  }
  const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (!res.ok || !body || typeof body.access_token !== "string" || !body.access_token) {
    const code = safeCode(body?.error);
    const what = code ? `answered ${res.status} (${code})` : `answered ${res.status} without an access token`;
    // A 5xx without an OAuth error code is the server's trouble, not the grant's (see isTransientRefreshError).
    const fallback = res.status >= 500 ? "server_error" : "invalid_token_response";
    throw new TokenEndpointError(`The provider's token endpoint ${what}.`, code ?? fallback);
  }
  const expiresIn = Number(body.expires_in);
  return {
    kind: "oauth",
    access_token: body.access_token,
    refresh_token:
      typeof body.refresh_token === "string" && body.refresh_token
        ? body.refresh_token
        : (options.previousRefreshToken ?? null),
    token_type: typeof body.token_type === "string" && body.token_type ? body.token_type : "Bearer",
    scope: typeof body.scope === "string" ? body.scope : null,
    expires_at:
      Number.isFinite(expiresIn) && expiresIn > 0
        ? new Date(options.now.getTime() + expiresIn * 1000).toISOString()
        : null,
  };
}

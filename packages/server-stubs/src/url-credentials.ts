/**
 * Query parameters that carry credentials by common convention (OAuth tokens, API keys, passwords, pre-signed
 * URL signatures). Compared case-insensitively, with `-` and `_` alike.
 */
const SECRET_QUERY_PARAMETERS = new Set([
  "access_token",
  "refresh_token",
  "id_token",
  "token",
  "auth_token",
  "private_token",
  "session_token",
  "api_key",
  "apikey",
  "x_api_key",
  "key",
  "secret",
  "client_secret",
  "password",
  "passwd",
  "pwd",
  "sig",
  "signature",
]);

const isSecretParameter = (name: string) => SECRET_QUERY_PARAMETERS.has(name.toLowerCase().replace(/-/g, "_"));

/** Where credentials go instead of a URL; every refusal says it. */
export const CREDENTIALS_GO_ELSEWHERE =
  "put credentials in an auth config (tokens, OAuth) or a config (API keys, headers), not in the URL";

/**
 * What in `value` is a credential: `userinfo` for `user:password@`, or the name of a secret query parameter.
 * Undefined for a URL without any (and for text that is not a URL: the `uri` format refuses that).
 */
export function credentialsInUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.username || url.password) return "userinfo";
  for (const name of url.searchParams.keys()) if (isSecretParameter(name)) return name;
  return undefined;
}

const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;
const QUERY_VALUE = /([?&])([^=&#\s]+)=([^&#\s]*)/g;

/**
 * `text` with the credentials of every URL in it masked: userinfo and the values of secret query parameters
 * become `[redacted]`. For log lines and error messages that quote a URL (an upstream's error, say).
 */
export function maskUrlCredentials(text: string, alsoMask: readonly string[] = []): string {
  return text
    .replace(USERINFO, "$1[redacted]@")
    .replace(QUERY_VALUE, (whole, sep: string, name: string) =>
      isSecretParameter(name) || alsoMask.includes(name) ? `${sep}${name}=[redacted]` : whole,
    );
}

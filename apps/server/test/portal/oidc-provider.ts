import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

/** Who signs in at the test provider: their login name is their `sub`. */
export interface TestAccount {
  name: string;
  email: string;
  groups: string[];
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts by login; add or change them between sign-ins. */
  accounts: Map<string, TestAccount>;
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider (oidc-provider) on 127.0.0.1 with one confidential client, PKCE required, and its
 * development login and consent pages (any password): what a portal's single sign-on talks to in the tests.
 */
export async function startOidcProvider(redirectUris: string[]): Promise<TestOidcProvider> {
  const accounts = new Map<string, TestAccount>();
  const server: Server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = "toolplane-portal";
  const clientSecret = "portal-client-secret-for-tests";
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_post",
      },
    ],
    claims: { openid: ["sub"], email: ["email"], profile: ["name"], groups: ["groups"] },
    scopes: ["openid", "email", "profile", "groups"],
    pkce: { required: () => true },
    cookies: { keys: ["oidc-provider-test-cookie-key"] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: () => ({ sub, ...account }) };
    },
  });
  server.on("request", provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

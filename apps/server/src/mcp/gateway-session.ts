import type { JsonObject, Runtime } from "../db/schema.ts";

/**
 * What the MCP gateway needs to serve one session: the boundary between the sessions resources (which store
 * sessions and their providers) and the gateway (which reaches upstream MCP servers). Loaded from the database
 * on every request that needs it, so any server process can serve any session.
 */
export interface GatewaySession {
  id: string;
  instanceId: string;
  /** Only `active` sessions are served; anything else closes the MCP connection. */
  status: string;
  /** SHA-256 (hex) of the per-session secret returned with the session; the gateway accepts the secret or an
   * API key of the session's instance. */
  secretHash: string;
  providers: GatewaySessionProvider[];
}

export interface GatewaySessionProvider {
  /** The session provider (`spv_…`) a tool call is recorded against. */
  sessionProviderId: string;
  providerId: string;
  /** The provider's slug, the default prefix source for tool keys on collisions. */
  providerSlug: string;
  providerDeploymentId: string;
  providerVersionId: string;
  runtime: Runtime;
  /** Decrypted config data (validated against the version's config schema when it was stored), if any. */
  config: JsonObject | null;
  /** The auth config whose credentials are applied to upstream calls (see UpstreamCredentials), if any. */
  providerAuthConfigId: string | null;
  /** `tool_filters.tool_keys`: when set, only these tools of the provider are exposed. */
  toolKeys: string[] | null;
}

/** Implemented by the sessions resources; the gateway calls it with the tenant of the credential presented. */
export type LoadGatewaySession = (sessionId: string) => Promise<GatewaySession | null>;

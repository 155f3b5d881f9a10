import { customProviderCommits } from "./custom-provider-commits.ts";
import { customProviderVersions } from "./custom-provider-versions.ts";
import { customProviders } from "./custom-providers.ts";
import { portalConsumerAccess } from "./portal-consumer-access.ts";
import { portalConsumers } from "./portal-consumers.ts";
import { portalInvitations } from "./portal-invitations.ts";
import { portals } from "./portals.ts";
import { providerAuthConfigs } from "./provider-auth-configs.ts";
import { providerAuthCredentials } from "./provider-auth-credentials.ts";
import { providerAuthExports } from "./provider-auth-exports.ts";
import { providerAuthImports } from "./provider-auth-imports.ts";
import { providerConfigVaults } from "./provider-config-vaults.ts";
import { providerConfigs } from "./provider-configs.ts";
import { providerDeployments } from "./provider-deployments.ts";
import { providerGroups } from "./provider-groups.ts";
import { providerListings } from "./provider-listings.ts";
import { providerOAuthSetups } from "./provider-oauth-setups.ts";
import { providerOAuthTokenImports } from "./provider-oauth-token-imports.ts";
import { providerSetupSessions } from "./provider-setup-sessions.ts";
import { providerVersions } from "./provider-versions.ts";
import { providers } from "./providers.ts";
import { servers } from "./servers.ts";
import { sessionProviders } from "./session-providers.ts";
import { sessionTemplateProviders } from "./session-template-providers.ts";
import { sessionTemplates } from "./session-templates.ts";
import { sessions } from "./sessions.ts";
import { toolCalls } from "./tool-calls.ts";
import type { Suite } from "./types.ts";

/** Every resource suite, run in this order. Add a resource's suite here when its issue lands. */
export const suites: Suite[] = [
  providers,
  providerVersions,
  providerListings,
  providerGroups,
  portals,
  portalConsumerAccess,
  portalInvitations,
  portalConsumers,
  servers,
  providerDeployments,
  providerConfigs,
  providerConfigVaults,
  providerAuthCredentials,
  providerAuthConfigs,
  providerAuthImports,
  providerAuthExports,
  sessions,
  sessionProviders,
  sessionTemplates,
  sessionTemplateProviders,
  providerOAuthSetups,
  providerSetupSessions,
  providerOAuthTokenImports,
  toolCalls,
  customProviders,
  customProviderVersions,
  customProviderCommits,
];

export { probeNotImplemented } from "./not-implemented.ts";
export { defineSuite, type Suite } from "./types.ts";

import type { Handlers } from "@toolplane/server-stubs";
import type { AppDeps } from "../app.ts";
import type { RequestContext } from "../context.ts";
import { Gateway } from "../mcp/gateway.ts";
import { OAuthFlowStore } from "../oauth/flows.ts";
import { customProviderCommitHandlers } from "./custom-provider-commits/handlers.ts";
import { CustomProviderCommitService } from "./custom-provider-commits/service.ts";
import { customProviderVersionHandlers } from "./custom-provider-versions/handlers.ts";
import { CustomProviderVersionService } from "./custom-provider-versions/service.ts";
import { customProviderHandlers } from "./custom-providers/handlers.ts";
import { CustomProviderService } from "./custom-providers/service.ts";
import { portalConsumerAccessHandlers } from "./portal-consumer-access/handlers.ts";
import { PortalConsumerAccessService } from "./portal-consumer-access/service.ts";
import { portalConsumerHandlers } from "./portal-consumers/handlers.ts";
import { PortalConsumerService } from "./portal-consumers/service.ts";
import { portalInvitationHandlers } from "./portal-invitations/handlers.ts";
import { PortalInvitationService } from "./portal-invitations/service.ts";
import { portalHandlers } from "./portals/handlers.ts";
import { PortalService } from "./portals/service.ts";
import { providerAuthConfigHandlers } from "./provider-auth-configs/handlers.ts";
import { authConfigScope } from "./provider-auth-configs/scope.ts";
import { ProviderAuthConfigService } from "./provider-auth-configs/service.ts";
import { providerAuthCredentialsHandlers } from "./provider-auth-credentials/handlers.ts";
import { ProviderAuthCredentialsService } from "./provider-auth-credentials/service.ts";
import { providerAuthExportHandlers } from "./provider-auth-exports/handlers.ts";
import { ProviderAuthExportService } from "./provider-auth-exports/service.ts";
import { providerAuthImportHandlers } from "./provider-auth-imports/handlers.ts";
import { ProviderAuthImportService } from "./provider-auth-imports/service.ts";
import { providerConfigVaultHandlers } from "./provider-config-vaults/handlers.ts";
import { ProviderConfigVaultService } from "./provider-config-vaults/service.ts";
import { providerConfigHandlers } from "./provider-configs/handlers.ts";
import { ProviderConfigService } from "./provider-configs/service.ts";
import { providerDeploymentHandlers } from "./provider-deployments/handlers.ts";
import { ProviderDeploymentService } from "./provider-deployments/service.ts";
import { providerGroupHandlers } from "./provider-groups/handlers.ts";
import { ProviderGroupService } from "./provider-groups/service.ts";
import { providerListingHandlers } from "./provider-listings/handlers.ts";
import { ProviderListingService } from "./provider-listings/service.ts";
import { providerOAuthSetupHandlers } from "./provider-oauth-setups/handlers.ts";
import { ProviderOAuthSetupService } from "./provider-oauth-setups/service.ts";
import { providerOAuthTokenImportHandlers } from "./provider-oauth-token-imports/handlers.ts";
import { ProviderOAuthTokenImportService } from "./provider-oauth-token-imports/service.ts";
import { providerSetupSessionHandlers } from "./provider-setup-sessions/handlers.ts";
import { ProviderSetupSessionService } from "./provider-setup-sessions/service.ts";
import { providerVersionHandlers } from "./provider-versions/handlers.ts";
import { ProviderVersionService } from "./provider-versions/service.ts";
import { providerHandlers } from "./providers/handlers.ts";
import { ProviderService } from "./providers/service.ts";
import { serverHandlers } from "./servers/handlers.ts";
import { ServerService } from "./servers/service.ts";
import { sessionProviderHandlers } from "./session-providers/handlers.ts";
import { SessionProviderService } from "./session-providers/service.ts";
import { sessionTemplateProviderHandlers } from "./session-template-providers/handlers.ts";
import { SessionTemplateProviderService } from "./session-template-providers/service.ts";
import { sessionTemplateHandlers } from "./session-templates/handlers.ts";
import { SessionTemplateService } from "./session-templates/service.ts";
import { gatewaySessionLoader } from "./sessions/gateway-view.ts";
import { sessionHandlers } from "./sessions/handlers.ts";
import { SessionService } from "./sessions/service.ts";
import { toolCallHandlers } from "./tool-calls/handlers.ts";
import { ToolCallService } from "./tool-calls/service.ts";

/** Wires every tag's handlers to its service. */
export function createHandlers({
  db,
  publicUrl,
  secrets,
}: Pick<AppDeps, "db" | "publicUrl" | "secrets">): Handlers<RequestContext> {
  const portals = new PortalService(db, publicUrl, secrets);
  const consumers = new PortalConsumerService(db, portals);
  const providers = new ProviderService(db);
  const deployments = new ProviderDeploymentService(db);
  const authConfigs = new ProviderAuthConfigService(db);
  const authConfigPath = authConfigScope(deployments, authConfigs);
  const customProviders = new CustomProviderService(db, secrets);
  const flows = new OAuthFlowStore(db);
  const sessions = new SessionService(db, publicUrl);
  const sessionTemplates = new SessionTemplateService(db);
  return {
    providerDeployments: providerDeploymentHandlers(deployments),
    providerConfigs: providerConfigHandlers(deployments, new ProviderConfigService(db, deployments, secrets)),
    providerConfigVaults: providerConfigVaultHandlers(deployments, new ProviderConfigVaultService(db, secrets)),
    providerAuthCredentials: providerAuthCredentialsHandlers(
      deployments,
      new ProviderAuthCredentialsService(db, secrets),
    ),
    providerAuthConfigs: providerAuthConfigHandlers(deployments, authConfigs),
    providerAuthExports: providerAuthExportHandlers(authConfigPath, new ProviderAuthExportService(db, secrets)),
    providerAuthImports: providerAuthImportHandlers(authConfigPath, new ProviderAuthImportService(db, secrets)),
    providerGroups: providerGroupHandlers(new ProviderGroupService(db)),
    portals: portalHandlers(portals),
    portalConsumerAccess: portalConsumerAccessHandlers(new PortalConsumerAccessService(db, portals, consumers)),
    portalConsumers: portalConsumerHandlers(consumers),
    portalInvitations: portalInvitationHandlers(new PortalInvitationService(db, portals, consumers)),
    servers: serverHandlers(new ServerService(db)),
    providers: providerHandlers(providers),
    providerVersions: providerVersionHandlers(new ProviderVersionService(db, providers)),
    providerListings: providerListingHandlers(new ProviderListingService(db)),
    providerOAuthTokenImports: providerOAuthTokenImportHandlers(
      new ProviderOAuthTokenImportService(db, secrets, deployments),
    ),
    providerOAuthSetups: providerOAuthSetupHandlers(deployments, new ProviderOAuthSetupService(flows, publicUrl)),
    toolCalls: toolCallHandlers(
      new ToolCallService(db, new Gateway(db, secrets, publicUrl), gatewaySessionLoader(db, secrets)),
    ),
    sessionProviders: sessionProviderHandlers(new SessionProviderService(db, sessions)),
    customProviders: customProviderHandlers(customProviders),
    customProviderCommits: customProviderCommitHandlers(
      db,
      customProviders,
      new CustomProviderCommitService(db, customProviders),
    ),
    customProviderVersions: customProviderVersionHandlers(
      db,
      customProviders,
      new CustomProviderVersionService(db, secrets, customProviders),
    ),
    sessions: sessionHandlers(sessions),
    sessionTemplates: sessionTemplateHandlers(sessionTemplates),
    sessionTemplateProviders: sessionTemplateProviderHandlers(new SessionTemplateProviderService(db, sessionTemplates)),
    providerSetupSessions: providerSetupSessionHandlers(deployments, new ProviderSetupSessionService(flows, publicUrl)),
  };
}

import type { Handlers } from "@toolplane/server-stubs";
import type { AppDeps } from "../app.ts";
import type { RequestContext } from "../context.ts";
import { notImplemented } from "./not-implemented.ts";
import { portalConsumerAccessHandlers } from "./portal-consumer-access/handlers.ts";
import { PortalConsumerAccessService } from "./portal-consumer-access/service.ts";
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
import { serverHandlers } from "./servers/handlers.ts";
import { ServerService } from "./servers/service.ts";

/** Wires every tag's handlers to its service. Tags whose issue has not landed answer 501. */
export function createHandlers({
  db,
  publicUrl,
  secrets,
}: Pick<AppDeps, "db" | "publicUrl" | "secrets">): Handlers<RequestContext> {
  const portals = new PortalService(db, publicUrl);
  const deployments = new ProviderDeploymentService(db);
  const authConfigs = new ProviderAuthConfigService(db);
  const authConfigPath = authConfigScope(deployments, authConfigs);
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
    portalConsumerAccess: portalConsumerAccessHandlers(new PortalConsumerAccessService(db, portals)),
    servers: serverHandlers(new ServerService(db)),
    providerOAuthTokenImports: notImplemented(
      "listProviderOAuthTokenImports",
      "createProviderOAuthTokenImport",
      "getProviderOAuthTokenImport",
      "updateProviderOAuthTokenImport",
    ),
    providerOAuthSetups: notImplemented(
      "listProviderOAuthSetups",
      "getProviderOAuthSetup",
      "createProviderOAuthSetup",
      "updateProviderOAuthSetup",
    ),
    toolCalls: notImplemented(
      "listToolCalls",
      "getToolCall",
      "listSessionToolCalls",
      "getSessionToolCall",
      "createSessionToolCall",
    ),
    sessionProviders: notImplemented(
      "listSessionProviders",
      "getSessionProvider",
      "createSessionProvider",
      "updateSessionProvider",
      "deleteSessionProvider",
    ),
    customProviders: notImplemented(
      "listCustomProviders",
      "getCustomProvider",
      "createCustomProvider",
      "updateCustomProvider",
    ),
    customProviderCommits: notImplemented(
      "listCustomProviderCommits",
      "getCustomProviderCommit",
      "createCustomProviderCommit",
    ),
    customProviderVersions: notImplemented(
      "listCustomProviderVersions",
      "getCustomProviderVersion",
      "createCustomProviderVersion",
    ),
    sessions: notImplemented("listSessions", "getSession", "createSession", "updateSession", "deleteSession"),
    sessionTemplates: notImplemented(
      "listSessionTemplates",
      "getSessionTemplate",
      "createSessionTemplate",
      "updateSessionTemplate",
    ),
    sessionTemplateProviders: notImplemented(
      "listSessionTemplateProviders",
      "getSessionTemplateProvider",
      "createSessionTemplateProvider",
      "updateSessionTemplateProvider",
      "deleteSessionTemplateProvider",
    ),
    providerSetupSessions: notImplemented(
      "listProviderSetupSessions",
      "getProviderSetupSession",
      "createProviderSetupSession",
      "updateProviderSetupSession",
      "deleteProviderSetupSession",
    ),
  };
}

import type { Handlers } from "@toolplane/server-stubs";
import type { AppDeps } from "../app.ts";
import type { RequestContext } from "../context.ts";
import { notImplemented } from "./not-implemented.ts";
import { providerGroupHandlers } from "./provider-groups/handlers.ts";
import { ProviderGroupService } from "./provider-groups/service.ts";

/** Wires every tag's handlers to its service. Tags whose issue has not landed answer 501. */
export function createHandlers({ db }: Pick<AppDeps, "db" | "publicUrl">): Handlers<RequestContext> {
  return {
    providerGroups: providerGroupHandlers(new ProviderGroupService(db)),
    providerOAuthTokenImports: notImplemented(
      "listProviderOAuthTokenImports",
      "createProviderOAuthTokenImport",
      "getProviderOAuthTokenImport",
      "updateProviderOAuthTokenImport",
    ),
    servers: notImplemented("getServer"),
    providerOAuthSetups: notImplemented(
      "listProviderOAuthSetups",
      "getProviderOAuthSetup",
      "createProviderOAuthSetup",
      "updateProviderOAuthSetup",
    ),
    providerAuthCredentials: notImplemented(
      "listProviderAuthCredentials",
      "getProviderAuthCredentials",
      "createProviderAuthCredentials",
      "updateProviderAuthCredentials",
      "deleteProviderAuthCredentials",
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
    providerDeployments: notImplemented(
      "listProviderDeployments",
      "getProviderDeployment",
      "createProviderDeployment",
      "updateProviderDeployment",
      "deleteProviderDeployment",
    ),
    providerConfigs: notImplemented(
      "listProviderConfigs",
      "getProviderConfig",
      "createProviderConfig",
      "updateProviderConfig",
      "deleteProviderConfig",
      "getProviderConfigSchema",
    ),
    providerConfigVaults: notImplemented(
      "listProviderConfigVaults",
      "getProviderConfigVault",
      "createProviderConfigVault",
      "updateProviderConfigVault",
      "deleteProviderConfigVault",
    ),
    providerSetupSessions: notImplemented(
      "listProviderSetupSessions",
      "getProviderSetupSession",
      "createProviderSetupSession",
      "updateProviderSetupSession",
      "deleteProviderSetupSession",
    ),
    providerAuthConfigs: notImplemented(
      "listProviderAuthConfigs",
      "getProviderAuthConfig",
      "createProviderAuthConfig",
      "updateProviderAuthConfig",
      "deleteProviderAuthConfig",
    ),
    providerAuthExports: notImplemented("listProviderAuthExports", "getProviderAuthExport", "createProviderAuthExport"),
    providerAuthImports: notImplemented(
      "listProviderAuthImports",
      "getProviderAuthImport",
      "createProviderAuthImport",
      "getProviderAuthImportSchema",
    ),
    portals: notImplemented("listPortals", "getPortal", "createPortal", "updatePortal", "deletePortal"),
    portalConsumerAccess: notImplemented(
      "listPortalConsumerAccess",
      "getPortalConsumerAccess",
      "createPortalConsumerAccess",
      "deletePortalConsumerAccess",
    ),
  };
}

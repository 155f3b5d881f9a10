import type { ProviderAuthImportsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { AuthConfigScope } from "../provider-auth-configs/scope.ts";
import type { ProviderAuthImportService } from "./service.ts";

type Resolve = (
  instanceId: string,
  path: { provider_deployment_id: string; provider_auth_config_id: string },
) => Promise<AuthConfigScope>;

export const providerAuthImportHandlers = (
  scope: Resolve,
  imports: ProviderAuthImportService,
): ProviderAuthImportsHandlers<RequestContext> => ({
  listProviderAuthImports: async ({ path, query }, ctx) => imports.list(await scope(ctx.instanceId, path), query),
  getProviderAuthImport: async ({ path }, ctx) =>
    imports.get(await scope(ctx.instanceId, path), path.provider_auth_import_id),
  createProviderAuthImport: async ({ path, body }, ctx) => imports.create(await scope(ctx.instanceId, path), body),
  getProviderAuthImportSchema: async ({ path, query }, ctx) =>
    imports.schema(await scope(ctx.instanceId, path), query.provider_auth_method_id),
});

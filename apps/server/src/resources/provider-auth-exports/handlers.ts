import type { ProviderAuthExportsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { AuthConfigScope } from "../provider-auth-configs/scope.ts";
import type { ProviderAuthExportService } from "./service.ts";

type Resolve = (
  instanceId: string,
  path: { provider_deployment_id: string; provider_auth_config_id: string },
) => Promise<AuthConfigScope>;

export const providerAuthExportHandlers = (
  scope: Resolve,
  exports: ProviderAuthExportService,
): ProviderAuthExportsHandlers<RequestContext> => ({
  listProviderAuthExports: async ({ path, query }, ctx) => exports.list(await scope(ctx.instanceId, path), query),
  getProviderAuthExport: async ({ path }, ctx) =>
    exports.get(await scope(ctx.instanceId, path), path.provider_auth_export_id),
  createProviderAuthExport: async ({ path, body }, ctx) => exports.create(await scope(ctx.instanceId, path), body),
});

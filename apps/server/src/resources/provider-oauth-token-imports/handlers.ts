import type { ProviderOAuthTokenImportsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderOAuthTokenImportService } from "./service.ts";

export const providerOAuthTokenImportHandlers = (
  imports: ProviderOAuthTokenImportService,
): ProviderOAuthTokenImportsHandlers<RequestContext> => ({
  listProviderOAuthTokenImports: ({ query }, ctx) => imports.list(ctx.instanceId, query),
  createProviderOAuthTokenImport: ({ body }, ctx) => imports.create(ctx.instanceId, body),
  getProviderOAuthTokenImport: ({ path }, ctx) => imports.get(ctx.instanceId, path.take_in_id),
  updateProviderOAuthTokenImport: ({ path, body }, ctx) => imports.update(ctx.instanceId, path.take_in_id, body),
});

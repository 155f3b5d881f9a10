import type { CustomProvidersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { CustomProviderService } from "./service.ts";

export const customProviderHandlers = (
  customProviders: CustomProviderService,
): CustomProvidersHandlers<RequestContext> => ({
  listCustomProviders: ({ query }, ctx) => customProviders.list(ctx.instanceId, query ?? {}),
  getCustomProvider: ({ path }, ctx) => customProviders.get(ctx.instanceId, path.custom_provider_id),
  createCustomProvider: ({ body }, ctx) => customProviders.create(ctx.instanceId, body),
  updateCustomProvider: ({ path, body }, ctx) => customProviders.update(ctx.instanceId, path.custom_provider_id, body),
});

import type { ProvidersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderService } from "./service.ts";

export const providerHandlers = (providers: ProviderService): ProvidersHandlers<RequestContext> => ({
  listProviders: ({ query }, ctx) => providers.list(ctx.instanceId, query ?? {}),
  getProvider: ({ path }, ctx) => providers.get(ctx.instanceId, path.provider_id),
});

import type { SessionTemplateProvidersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { SessionTemplateProviderService } from "./service.ts";

export const sessionTemplateProviderHandlers = (
  providers: SessionTemplateProviderService,
): SessionTemplateProvidersHandlers<RequestContext> => ({
  listSessionTemplateProviders: ({ path, query }, ctx) =>
    providers.list(ctx.instanceId, path.session_template_id, query),
  getSessionTemplateProvider: ({ path }, ctx) =>
    providers.get(ctx.instanceId, path.session_template_id, path.session_template_provider_id),
  createSessionTemplateProvider: ({ path, body }, ctx) =>
    providers.create(ctx.instanceId, path.session_template_id, body),
  updateSessionTemplateProvider: ({ path, body }, ctx) =>
    providers.update(ctx.instanceId, path.session_template_id, path.session_template_provider_id, body),
  deleteSessionTemplateProvider: ({ path }, ctx) =>
    providers.delete(ctx.instanceId, path.session_template_id, path.session_template_provider_id),
});

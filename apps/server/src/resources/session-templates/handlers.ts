import type { SessionTemplatesHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { SessionTemplateService } from "./service.ts";

export const sessionTemplateHandlers = (
  templates: SessionTemplateService,
): SessionTemplatesHandlers<RequestContext> => ({
  listSessionTemplates: ({ query }, ctx) => templates.list(ctx.instanceId, query),
  getSessionTemplate: ({ path }, ctx) => templates.get(ctx.instanceId, path.session_template_id),
  createSessionTemplate: ({ body }, ctx) => templates.create(ctx.instanceId, body),
  updateSessionTemplate: ({ path, body }, ctx) => templates.update(ctx.instanceId, path.session_template_id, body),
});

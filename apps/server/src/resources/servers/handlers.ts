import type { ServersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ServerService } from "./service.ts";

export const serverHandlers = (servers: ServerService): ServersHandlers<RequestContext> => ({
  listServers: ({ query }, ctx) => servers.list(ctx.instanceId, query ?? {}),
  getServer: ({ path }, ctx) => servers.get(ctx.instanceId, path.server_id),
});

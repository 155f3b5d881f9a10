import type { ServersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import { notImplemented } from "../not-implemented.ts";
import type { ServerService } from "./service.ts";

export const serverHandlers = (servers: ServerService): ServersHandlers<RequestContext> => ({
  ...notImplemented("listServers"),
  getServer: ({ path }, ctx) => servers.get(ctx.instanceId, path.server_id),
});

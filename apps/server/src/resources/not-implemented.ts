import { ApiError, type Handler, type OperationId } from "@toolplane/server-stubs";
import type { RequestContext } from "../context.ts";

/**
 * Handlers for operations whose issue has not landed: they answer 501 `not_implemented`, never a fake success.
 * Each operation is still named, so an operation added to the spec breaks the type check here too.
 */
export function notImplemented<K extends OperationId>(...operationIds: K[]): { [P in K]: Handler<P, RequestContext> } {
  const handlers: Partial<Record<K, Handler<K, RequestContext>>> = {};
  for (const id of operationIds) {
    handlers[id] = async () => {
      throw new ApiError("not_implemented", `${id} is not implemented yet.`, {
        hint: "See the contract report (pnpm test:contract) for what this server implements.",
      });
    };
  }
  return handlers as unknown as { [P in K]: Handler<P, RequestContext> };
}

import type { SuiteContext } from "../context.ts";
import type { SpecOperation } from "../spec.ts";

/**
 * The generic probe for every operation no suite claims: one well-formed request (path ids of the right prefix
 * from the parameters' examples, the body schema's example as the body, so validation passes) that must come
 * back 501 `not_implemented` in the documented error shape.
 *
 * It goes straight to the server, not through Prism: `prism proxy` replaces any upstream 501 with a mocked
 * success (prism-core's factory: "Remocking the call"), so through the proxy a 501 can never be seen, let alone
 * validated. The answer is validated in-process against the operation's documented 501 response instead.
 */
export async function probeNotImplemented(ctx: SuiteContext, op: SpecOperation): Promise<void> {
  await ctx.send(op.operationId, 501, {
    via: "direct",
    code: "not_implemented",
    label: "501 not implemented (direct)",
    hint:
      `if ${op.operationId} is implemented now, add a suite for "${op.tag}" in packages/contract-tests/src/suite/ ` +
      "and register it in src/suite/index.ts",
  });
}

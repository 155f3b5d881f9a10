import type { SuiteContext } from "../context.ts";
import type { OperationId } from "../spec.ts";

/**
 * The contract cases of one resource (one spec tag). A suite claims operations: the runner counts them as
 * implemented and expects the suite to check their success path; every operation no suite claims is probed
 * once and must answer 501 `not_implemented`.
 */
export interface Suite {
  /** The spec tag, exactly as in `spec/openapi.yaml` (e.g. "Provider groups"). */
  tag: string;
  /** The operations this suite drives; by default every operation of the tag. */
  operations?: OperationId[];
  run(ctx: SuiteContext): Promise<void>;
}

/** Identity function that gives a suite object its type. */
export const defineSuite = (suite: Suite): Suite => suite;

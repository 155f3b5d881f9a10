export {
  type Actor,
  createSuiteContext,
  type RawInit,
  type SendOptions,
  type SuiteContext,
  UNKNOWN_API_KEY,
} from "./context.ts";
export { freePort, PRISM_BIN, type PrismOptions, type PrismProxy, startPrism } from "./prism.ts";
export {
  type Checkable,
  CheckFailed,
  type CheckOptions,
  type CheckResult,
  formatViolation,
  type Observation,
  parseViolations,
  Recorder,
  type Violation,
} from "./recorder.ts";
export { buildReport, type ContractReport, formatReport, type OperationReport } from "./report.ts";
export { claimOperations, DEFAULT_REPORT_PATH, type RunOptions, type RunResult, runContractTests } from "./run.ts";
export { type RunningServer, startToolplane, type Tenant } from "./server.ts";
export {
  bundledSpecPath,
  createOperationMatcher,
  fillPath,
  listOperations,
  type OperationId,
  readSpec,
  type SpecOperation,
} from "./spec.ts";
export { defineSuite, probeNotImplemented, type Suite, suites } from "./suite/index.ts";

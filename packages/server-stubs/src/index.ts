export { ApiError, type ErrorBody, type ErrorCode, type ErrorDetail, statusOfErrorCode } from "./errors.ts";
export * from "./generated/operations.gen.ts";
export type { Handler, OperationDescriptor, OperationId, OperationInput, SuccessBody } from "./handler.ts";
export { checkJsonDepth } from "./input-guard.ts";
export type { OpenApiDocument } from "./openapi.ts";
export { type ApiRouterOptions, createApiRouter } from "./router.ts";
export { CREDENTIALS_GO_ELSEWHERE, credentialsInUrl, maskUrlCredentials } from "./url-credentials.ts";
export { toDetails as ajvErrorsToDetails } from "./validation.ts";

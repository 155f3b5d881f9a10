import type { components } from "@toolplane/types";

export type ErrorCode = components["schemas"]["ErrorCode"];
export type ErrorBody = components["schemas"]["Error"];
export type ErrorDetail = components["schemas"]["ErrorDetail"];

/** The one place an error code becomes an HTTP status. Typed by the spec's enum: a new code must be mapped. */
export const statusOfErrorCode: Record<ErrorCode, number> = {
  invalid_data: 400,
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  idempotency_conflict: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  too_many_requests: 429,
  internal_server_error: 500,
  not_implemented: 501,
  bad_gateway: 502,
  service_unavailable: 503,
  timeout: 504,
};

interface ApiErrorOptions {
  hint?: string;
  entity?: string;
  errors?: ErrorDetail[];
  headers?: Record<string, string>;
  cause?: unknown;
}

/** The error every layer throws; the server's error middleware turns it into the documented body. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly hint: string | undefined;
  readonly entity: string | undefined;
  readonly errors: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    this.status = statusOfErrorCode[code];
    this.hint = options.hint;
    this.entity = options.entity;
    this.errors = options.errors;
    this.headers = options.headers;
  }

  toBody(): ErrorBody {
    return {
      __typename: "error",
      ok: false,
      status: this.status,
      code: this.code,
      message: this.message,
      ...(this.hint === undefined ? {} : { hint: this.hint }),
      ...(this.entity === undefined ? {} : { entity: this.entity }),
      ...(this.errors === undefined ? {} : { errors: this.errors }),
    };
  }

  static notFound(entity: string, id: string): ApiError {
    return new ApiError("not_found", `${entity} ${id} was not found.`, { entity });
  }
}

import type { components } from "@toolplane/types";

export type ErrorBody = components["schemas"]["Error"];
export type ErrorCode = components["schemas"]["ErrorCode"];

/** Thrown by `unwrap` and the pagination helper for every non-2xx answer; carries the documented error body. */
export class ToolplaneApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode | "unknown";
  readonly body: ErrorBody | undefined;
  readonly requestId: string | null;

  constructor(response: Response, body: unknown) {
    const error = isErrorBody(body) ? body : undefined;
    super(error ? `${response.status} ${error.code}: ${error.message}` : `HTTP ${response.status}`);
    this.name = "ToolplaneApiError";
    this.status = response.status;
    this.code = error?.code ?? "unknown";
    this.body = error;
    this.requestId = response.headers.get("x-request-id");
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  return typeof body === "object" && body !== null && (body as { __typename?: unknown }).__typename === "error";
}

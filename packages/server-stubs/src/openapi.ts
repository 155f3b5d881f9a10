/** The parts of an OpenAPI 3.1 document the router reads. */
export interface OpenApiParameter {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required?: boolean;
  schema?: { type?: string | string[] } & Record<string, unknown>;
}

export interface OpenApiOperation {
  operationId: string;
  parameters?: (OpenApiParameter | { $ref: string })[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
}

export type OpenApiPathItem = {
  parameters?: (OpenApiParameter | { $ref: string })[];
} & Partial<Record<"get" | "post" | "put" | "patch" | "delete", OpenApiOperation>>;

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, OpenApiPathItem>;
  components?: {
    schemas?: Record<string, unknown>;
    parameters?: Record<string, OpenApiParameter>;
  } & Record<string, unknown>;
}

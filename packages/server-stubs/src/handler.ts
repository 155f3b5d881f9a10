import type { operations } from "@toolplane/types";

export type OperationId = keyof operations;

export interface OperationDescriptor {
  operationId: OperationId;
  method: "get" | "post" | "put" | "patch" | "delete";
  /** OpenAPI path template, e.g. `/provider-groups/{provider_group_id}`. */
  path: string;
  tag: string;
  /** The key of the tag's handler object in `Handlers`. */
  group: string;
  successStatus: number;
}

/** `never` (no such parameters) becomes an empty object so handlers can always destructure. */
type Present<T> = [T] extends [never] ? Record<string, never> : Exclude<T, undefined>;

type JsonContent<T> = T extends { content: { "application/json": infer B } } ? B : undefined;

/** Validated, normalised input of an operation: Union query values are arrays, defaults are applied. */
export interface OperationInput<K extends OperationId> {
  path: Present<operations[K]["parameters"]["path"]>;
  query: Present<operations[K]["parameters"]["query"]>;
  body: JsonContent<operations[K]["requestBody"]>;
}

type Responses<K extends OperationId> = operations[K]["responses"];

/** The JSON body of the operation's 2xx response. */
export type SuccessBody<K extends OperationId> = JsonContent<Responses<K>[Extract<keyof Responses<K>, 200 | 201>]>;

export type Handler<K extends OperationId, Ctx> = (input: OperationInput<K>, ctx: Ctx) => Promise<SuccessBody<K>>;

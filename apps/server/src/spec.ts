import { createRequire } from "node:module";
import type { OpenApiDocument } from "@toolplane/server-stubs";

/** The bundled spec: the router validates against it and /openapi.json serves it. */
export const bundledSpec = createRequire(import.meta.url)("@toolplane/spec/openapi.json") as OpenApiDocument;

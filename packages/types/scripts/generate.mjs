// Step 2 of `pnpm generate`: the bundled spec → @toolplane/types (paths, components, operations) via openapi-typescript.
import { join } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import { bundledSpecPath, header, repoRoot, writeIfChanged } from "../../../scripts/lib/generated.mjs";

console.log("types: openapi-typescript");
// Fields with a default stay optional in request bodies (the server fills the default in).
const ast = await openapiTS(new URL(`file://${bundledSpecPath}`), { defaultNonNullable: false });
writeIfChanged(
  join(repoRoot, "packages/types/src/generated/openapi.gen.ts"),
  `${header("openapi-typescript")}\n\n${astToString(ast)}`,
);

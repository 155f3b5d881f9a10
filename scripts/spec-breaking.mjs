// `pnpm spec:breaking [ref]`: the breaking changes of the spec since a release, so that a change which would break
// existing clients fails CI unless it is meant (then it needs a major release and a line in spec/CHANGELOG.md).
//
// It compares the committed bundle, spec/generated/openapi.json, at `ref` (default: the latest tag v*) with the
// bundle in the work tree (pnpm generate:check keeps that one equal to the spec's sources), using api-smart-diff,
// which classifies every change of an OpenAPI document as breaking, non-breaking, deprecated or annotation, and
// reads OpenAPI 3.1 / JSON Schema 2020-12. (oasdiff is Go; openapi-diff rejects 3.1 documents; @useoptic/optic
// 1.0.9 crashes at start on Node 20 in its Spectral dependency.) Exit 1 on any breaking change; 0, with a message,
// when there is no release tag yet to compare against.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { apiCompare } from "api-smart-diff";
import { bundledSpecPath, repoRoot } from "./lib/generated.mjs";

const BUNDLE = "spec/generated/openapi.json";
const git = (...args) => execFileSync("git", args, { cwd: repoRoot, encoding: "utf8" }).trim();

let ref = process.argv[2];
if (!ref) {
  ref = git("tag", "--list", "v*", "--sort=-v:refname").split("\n")[0];
  if (!ref) {
    console.log("spec:breaking: no release tag (v*) yet, so nothing to compare against: skipped.");
    console.log("  Tag a release (git tag v0.1.0) or name a ref: pnpm spec:breaking <ref>.");
    process.exit(0);
  }
}

let before;
try {
  before = JSON.parse(git("show", `${ref}:${BUNDLE}`));
} catch (err) {
  console.error(`spec:breaking: cannot read ${BUNDLE} at ${ref}: ${String(err.stderr || err.message).trim()}`);
  process.exit(2);
}
const after = JSON.parse(readFileSync(bundledSpecPath, "utf8"));

const { diffs } = apiCompare(before, after);
const ofType = (type) => diffs.filter((d) => d.type === type); // Object.groupBy is Node 21+
const count = (type) => ofType(type).length;
console.log(
  `spec:breaking: ${BUNDLE} at ${ref} → work tree (${before.info?.version} → ${after.info?.version}): ` +
    `${count("breaking")} breaking, ${count("deprecated")} deprecated, ${count("non-breaking")} non-breaking, ` +
    `${count("annotation")} annotation, ${count("unclassified")} unclassified changes`,
);
for (const type of ["deprecated", "unclassified", "breaking"]) {
  for (const d of ofType(type)) console.log(`  ${type.padEnd(12)} ${d.description}  (${d.path.join(" › ")})`);
}
if (count("breaking") > 0) {
  console.log(
    "Breaking changes break existing clients. If that is intended, it needs a major release: describe each change " +
      "under Unreleased in spec/CHANGELOG.md, and tag the release so the next check compares against it.",
  );
  process.exit(1);
}

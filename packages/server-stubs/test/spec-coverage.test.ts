import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { operationTable } from "../src/index.ts";
import { spec } from "./spec.ts";

// The product is defined as the 96 operations of ../shared/api-operations.tsv (beside the repository), plus the
// catalog reads of issue 13 (the description leaves providers, versions and listings without endpoints, so no id
// could be found through the API) and the portal consumers and invitations of issue 15 (the description names
// consumers but gives no way to see or revoke them).
const tsv = fileURLToPath(new URL("../../../../shared/api-operations.tsv", import.meta.url));
const CATALOG_READS = [
  "get /providers",
  "get /providers/{provider_id}",
  "get /providers/{provider_id}/versions",
  "get /providers/{provider_id}/versions/{provider_version_id}",
  "get /provider-listings",
  "get /provider-listings/{provider_listing_id}",
  "get /servers",
];
const PORTAL_CONSUMERS = [
  "get /portals/{portal_id}/consumers",
  "get /portals/{portal_id}/consumers/{consumer_id}",
  "delete /portals/{portal_id}/consumers/{consumer_id}",
  "get /portals/{portal_id}/consumer-sessions",
  "delete /portals/{portal_id}/consumer-sessions/{consumer_session_id}",
  "get /portals/{portal_id}/invitations",
  "post /portals/{portal_id}/invitations",
  "get /portals/{portal_id}/invitations/{invitation_id}",
  "delete /portals/{portal_id}/invitations/{invitation_id}",
];

describe("the spec", () => {
  it.runIf(existsSync(tsv))(
    "describes exactly the operations of api-operations.tsv, catalog reads, portal consumers",
    () => {
      const expected = readFileSync(tsv, "utf8")
        .trim()
        .split("\n")
        .slice(1)
        .map((line) => {
          const [method = "", path = ""] = line.split("\t");
          return `${method.toLowerCase()} ${path.replace(/:([a-z_]+)/g, "{$1}")}`;
        })
        .concat(CATALOG_READS, PORTAL_CONSUMERS)
        .sort();
      const actual = operationTable.map((o) => `${o.method} ${o.path}`).sort();
      expect(actual).toEqual(expected);
      expect(actual).toHaveLength(96 + CATALOG_READS.length + PORTAL_CONSUMERS.length);
    },
  );

  it("documents 401, 500 and 501 and a 2xx on every operation, under bearer security", () => {
    expect(spec.security).toEqual([{ bearerAuth: [] }]);
    for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, { responses?: object }>>)) {
      for (const [method, op] of Object.entries(item)) {
        if (!op.responses) continue;
        const statuses = Object.keys(op.responses);
        expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(["401", "500", "501"]));
        expect(
          statuses.some((s) => s.startsWith("2")),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
  });
});

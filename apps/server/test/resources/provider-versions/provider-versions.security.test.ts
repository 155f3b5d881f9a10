import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { createRemote, firstVersion } from "../../custom-providers/support.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { useTestServer } from "../../support/fixture.ts";
import { expectNotFound, expectUnauthorizedEverywhere } from "../../support/security.ts";

const t = useTestServer();

const NOWHERE = "http://127.0.0.1:9/mcp";

describe("provider versions: security", () => {
  it("refuses requests without a valid key with 401", async () => {
    const { providerId, currentVersionId } = await catalogProvider(t.db, "github");
    await expectUnauthorizedEverywhere(t, [
      [`/providers/${providerId}/versions`, { method: "GET" }],
      [`/providers/${providerId}/versions/${currentVersionId}`, { method: "GET" }],
    ]);
  });

  it("hides another instance's custom provider versions: 404 under their provider and under mine", async () => {
    const owner = await t.createTenant("owner");
    const ownerServer = { ...t, client: owner.client };
    const theirs = await createRemote(ownerServer, NOWHERE, "Private tools");
    const theirVersion = (await firstVersion(ownerServer, theirs.id)).provider_version_id ?? "";
    const mine = await createRemote(t, NOWHERE, "My tools");

    const list = await t.client.GET("/providers/{provider_id}/versions", {
      params: { path: { provider_id: theirs.provider.id } },
    });
    await expectNotFound([list], "provider", ["Private tools"]);
    const gets = await Promise.all(
      [theirs.provider.id, mine.provider.id].map((provider_id) =>
        t.client.GET("/providers/{provider_id}/versions/{provider_version_id}", {
          params: { path: { provider_id, provider_version_id: theirVersion } },
        }),
      ),
    );
    await expectNotFound(gets, "provider.version", ["Private tools"]);

    const own = await unwrap(
      owner.client.GET("/providers/{provider_id}/versions", { params: { path: { provider_id: theirs.provider.id } } }),
    );
    expect(own.items.map((v) => v.id)).toEqual([theirVersion]);
    const myVersions = await unwrap(
      t.client.GET("/providers/{provider_id}/versions", { params: { path: { provider_id: mine.provider.id } } }),
    );
    expect(myVersions.items.map((v) => v.id)).not.toContain(theirVersion);
  });
});

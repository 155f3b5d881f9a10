// Slugs in constant time: a burst of equal names each claims the next number of one counter, so every create
// succeeds with a distinct slug and costs a bounded number of statements, whatever the burst's size.
import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { newId } from "../../src/lib/ids.ts";
import { insertWithUniqueSlug } from "../../src/lib/slugged-insert.ts";
import { useTestServer } from "../support/fixture.ts";

const t = useTestServer();

const createGroup = (name: string) => unwrap(t.client.POST("/provider-groups", { body: { name } }));

describe("slugs under a burst of equal names", () => {
  it("gives 200 concurrent creates of one name 200 distinct slugs: burst, burst-2 … burst-200", async () => {
    const same = await Promise.all(Array.from({ length: 200 }, () => createGroup("Burst")));
    const slugs = new Set(same.map((g) => g.slug));
    expect(slugs).toEqual(new Set(["burst", ...Array.from({ length: 199 }, (_, i) => `burst-${i + 2}`)]));
  });

  it("costs each create of a burst at most two inserts, however large the burst (counted, not timed)", async () => {
    const { instanceId } = await t.createTenant("slug-cost");
    let inserts = 0;
    const now = new Date();
    const create = () =>
      insertWithUniqueSlug(t.db, "provider_groups", instanceId, "Counted", (slug) => {
        inserts++;
        return t.db
          .insertInto("provider_groups")
          .values({
            id: newId("pgr"),
            instance_id: instanceId,
            name: "Counted",
            slug,
            created_at: now,
            updated_at: now,
          })
          .onConflict((oc) => oc.doNothing())
          .returningAll()
          .executeTakeFirst();
      });
    for (const size of [10, 100]) {
      inserts = 0;
      await Promise.all(Array.from({ length: size }, create));
      // The plain name once, then one numbered slug claimed from the counter: the old read-all-and-retry loop
      // made a burst of n cost O(n²) statements (seconds for 100).
      expect(inserts).toBeLessThanOrEqual(2 * size);
    }
  });

  it("skips slugs taken without the counter (older rows, a name whose own base is name-N)", async () => {
    // `Taken 2` slugifies to `taken-2`, which the `taken` counter would hand out second.
    expect((await createGroup("Taken 2")).slug).toBe("taken-2");
    expect((await createGroup("Taken")).slug).toBe("taken");
    expect((await createGroup("Taken")).slug).toBe("taken-3");
    expect((await createGroup("Taken")).slug).toBe("taken-4");
    // A row inserted behind the counter's back (as rows created before it existed were).
    await t.db
      .insertInto("provider_groups")
      .values({
        id: "pgr_01jqz7m3c8v4r2k9x5n6t0w1yb",
        instance_id: t.tenant.instanceId,
        name: "Legacy",
        description: null,
        slug: "legacy-2",
        created_at: new Date(),
        updated_at: new Date(),
      })
      .execute();
    await t.db
      .insertInto("provider_groups")
      .values({
        id: "pgr_01jqz7m3c8v4r2k9x5n6t0w1yc",
        instance_id: t.tenant.instanceId,
        name: "Legacy",
        description: null,
        slug: "legacy",
        created_at: new Date(),
        updated_at: new Date(),
      })
      .execute();
    expect((await createGroup("Legacy")).slug).toBe("legacy-3");
    expect((await createGroup("Legacy")).slug).toBe("legacy-4");
  });

  it("numbers portals the same way (custom providers too: custom-providers.happy.test.ts)", async () => {
    const portals = await Promise.all(
      [1, 2, 3].map(() => unwrap(t.client.POST("/portals", { body: { name: "Same Portal" } }))),
    );
    expect(new Set(portals.map((p) => p.slug))).toEqual(new Set(["same-portal", "same-portal-2", "same-portal-3"]));
  });
});

import type { KyselyPlugin } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ListParams, type Order, paginate } from "../../src/lib/pagination.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";

let t: StartedTestServer;
let ids: string[];
let instanceId: string;

beforeAll(async () => {
  t = await startTestServer();
  const tenant = await t.createTenant("paging");
  instanceId = tenant.instanceId;
  for (let i = 0; i < 6; i++) {
    const { response } = await tenant.client.POST("/provider-groups", { body: { name: `Group ${i}` } });
    expect(response.status).toBe(201);
  }
  // Another tenant's rows lie between and around ours: the filters must hold on both sides of a bound.
  await t.client.POST("/provider-groups", { body: { name: "Elsewhere" } });
  // The database's own order, so the reference below never compares ids in JS.
  ids = (
    await t.db.selectFrom("provider_groups").select("id").where("instance_id", "=", instanceId).orderBy("id").execute()
  ).map((r) => r.id);
});
afterAll(() => t.close());

/** What a page must hold, from the ids in order: `order` read as a list, the bound by its index in that list. */
function expected(order: Order, limit: number, side: "after" | "before" | undefined, at: number) {
  const list = order === "asc" ? ids : [...ids].reverse();
  const index = side ? list.indexOf(ids[at] ?? "") : -1;
  if (side === "before") {
    const items = list.slice(Math.max(0, index - limit), index);
    return { items, has_more_before: index - limit > 0, has_more_after: true };
  }
  const items = list.slice(index + 1, index + 1 + limit);
  return { items, has_more_before: index >= 0, has_more_after: index + 1 + limit < list.length };
}

async function page(params: ListParams) {
  let queries = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => args.node,
    // Called once per executed statement (transformQuery also runs for each embedded subquery).
    transformResult: async (args) => {
      queries++;
      return args.result;
    },
  };
  const query = t.db
    .withPlugin(counter)
    .selectFrom("provider_groups")
    .selectAll()
    .where("instance_id", "=", instanceId);
  const result = await paginate(query, "provider_groups.id", params);
  return { ...result, queries };
}

describe("paginate", () => {
  it("returns the right rows and flags for every order, limit and bound, in one query per non-empty page", async () => {
    for (const order of ["asc", "desc"] as const) {
      for (const limit of [1, 2, 6]) {
        for (const side of [undefined, "after", "before"] as const) {
          for (let at = 0; at < (side ? ids.length : 1); at++) {
            const want = expected(order, limit, side, at);
            const got = await page({ order, limit, ...(side ? { [side]: ids[at] } : {}) });
            const label = `${order} limit=${limit} ${side ?? "first"}=${at}`;
            expect(
              got.rows.map((r) => r.id),
              label,
            ).toEqual(want.items);
            expect(Object.keys(got.rows[0] ?? {}).sort(), label).toEqual(
              got.rows.length ? ["created_at", "description", "id", "instance_id", "name", "slug", "updated_at"] : [],
            );
            expect(got.pagination.has_more_before, label).toBe(want.has_more_before);
            expect(got.pagination.has_more_after, label).toBe(want.has_more_after);
            expect(got.pagination.previous_cursor === null, label).toBe(!got.pagination.has_more_before);
            expect(got.pagination.next_cursor === null, label).toBe(!got.pagination.has_more_after);
            if (got.rows.length > 0) expect(got.queries, label).toBe(1);
          }
        }
      }
    }
  });

  it("walks forward and back through cursors in both orders", async () => {
    for (const order of ["asc", "desc"] as const) {
      const seen: string[] = [];
      let current = await page({ order, limit: 4 });
      seen.push(...current.rows.map((r) => r.id));
      while (current.pagination.next_cursor) {
        current = await page({ limit: 4, cursor: current.pagination.next_cursor });
        expect(current.queries).toBe(1);
        seen.push(...current.rows.map((r) => r.id));
      }
      expect(seen).toEqual(order === "asc" ? ids : [...ids].reverse());
      const back = await page({ limit: 4, cursor: current.pagination.previous_cursor ?? "" });
      expect(back.rows.map((r) => r.id)).toEqual(seen.slice(0, 4));
      expect(back.pagination).toMatchObject({ has_more_before: false, has_more_after: true, previous_cursor: null });
    }
  });

  it("answers an empty page past the end with the flags of the far side and a cursor back", async () => {
    const past = await page({ after: ids[ids.length - 1] });
    expect(past.rows).toEqual([]);
    expect(past.pagination).toMatchObject({ has_more_before: true, has_more_after: false, next_cursor: null });
    const back = await page({ limit: 2, cursor: past.pagination.previous_cursor ?? "" });
    expect(back.rows.map((r) => r.id)).toEqual(ids.slice(-2));
  });
});

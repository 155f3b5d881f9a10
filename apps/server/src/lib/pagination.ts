import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { type SelectQueryBuilder, sql } from "kysely";

export type Pagination = components["schemas"]["Pagination"];
export type Order = "asc" | "desc";

export interface ListParams {
  limit?: number;
  after?: string;
  before?: string;
  cursor?: string;
  order?: Order;
}

/** What a cursor carries: a bound id, which side of it the page lies on, whether it includes the bound. */
interface Bound {
  side: "after" | "before";
  id: string;
  inclusive: boolean;
}

const DEFAULT_LIMIT = 20;
/** Name of the far-side flag column added to a bounded page query; stripped from the rows. */
const BEHIND = "__pagination_behind";

/**
 * Keyset pagination on the time-sortable id: every page is an index range scan (`id > bound order by id
 * limit n+1`), never OFFSET, so a page deep in a large table costs what the first one does.
 * `query` is the filtered, tenant-scoped select; `idColumn` its id column.
 */
export async function paginate<DB, TB extends keyof DB, O extends { id: string }>(
  query: SelectQueryBuilder<DB, TB, O>,
  idColumn: string,
  params: ListParams,
): Promise<{ rows: O[]; pagination: Pagination }> {
  const { bound, order } = resolve(params);
  const limit = params.limit ?? DEFAULT_LIMIT;
  const id = sql.ref(idColumn);
  const forward = bound?.side !== "before";
  const ascending = (order === "asc") === forward;
  const beyond = (b: Bound, flip: boolean) => {
    const include = flip ? !b.inclusive : b.inclusive;
    const op = ascending !== flip ? (include ? ">=" : ">") : include ? "<=" : "<";
    return sql<boolean>`${id} ${sql.raw(op)} ${b.id}`;
  };

  // The far side of the bound rides along as a scalar subquery column (evaluated once, as an InitPlan), so a page
  // after a bound is one round trip like the first page. Not `exists(...)`: PostgreSQL drops the order by inside
  // exists and may then seq-scan for a match; ordered toward the bound, the probe is one index step from it.
  const probe = (b: Bound) =>
    query
      .clearSelect()
      .select(id.as("id"))
      .where(beyond(b, true))
      .orderBy(sql`${id} ${sql.raw(ascending ? "desc" : "asc")}`)
      .limit(1);
  const scan = bound
    ? query.where(beyond(bound, false)).select(sql<boolean>`(${probe(bound)}) is not null`.as(BEHIND))
    : query;
  const fetched = (await scan
    .orderBy(sql`${id} ${sql.raw(ascending ? "asc" : "desc")}`)
    .limit(limit + 1)
    .execute()) as (O & { [BEHIND]?: boolean })[];
  const more = fetched.length > limit;
  const rows = fetched.slice(0, limit).map(({ [BEHIND]: _, ...row }) => row as unknown as O);
  if (!forward) rows.reverse();

  // An empty page carries no column, so only then is the far side probed separately.
  const behind = !bound ? false : fetched[0] ? fetched[0][BEHIND] === true : (await probe(bound).execute()).length > 0;
  const hasMoreAfter = forward ? more : behind;
  const hasMoreBefore = forward ? behind : more;

  const first = rows[0];
  const last = rows[rows.length - 1];
  // An empty page next to a bound continues from the bound itself, on its other side.
  const edge = (side: Bound["side"], row: O | undefined): string =>
    encodeCursor(
      row
        ? { side, id: row.id, inclusive: false }
        : { side, id: bound?.id ?? "", inclusive: bound ? !bound.inclusive : false },
      order,
    );
  return {
    rows,
    pagination: {
      has_more_before: hasMoreBefore,
      has_more_after: hasMoreAfter,
      next_cursor: hasMoreAfter ? edge("after", last) : null,
      previous_cursor: hasMoreBefore ? edge("before", first) : null,
    },
  };
}

function resolve(params: ListParams): { bound: Bound | undefined; order: Order } {
  const given = [params.after && "after", params.before && "before", params.cursor && "cursor"].filter(Boolean);
  if (given.length > 1) {
    throw new ApiError("bad_request", `Use only one of after, before and cursor (got ${given.join(" and ")}).`, {
      entity: "query",
    });
  }
  if (params.cursor) return decodeCursor(params.cursor);
  const order = params.order ?? "asc";
  if (params.after) return { bound: { side: "after", id: params.after, inclusive: false }, order };
  if (params.before) return { bound: { side: "before", id: params.before, inclusive: false }, order };
  return { bound: undefined, order };
}

function encodeCursor(bound: Bound, order: Order): string {
  const payload = { s: bound.side === "after" ? "a" : "b", id: bound.id, i: bound.inclusive ? 1 : 0, o: order };
  return Buffer.from(JSON.stringify(payload)).toString("base64url");
}

function decodeCursor(cursor: string): { bound: Bound; order: Order } {
  try {
    const p = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as Record<string, unknown>;
    if ((p.s === "a" || p.s === "b") && typeof p.id === "string" && p.id && (p.o === "asc" || p.o === "desc")) {
      return { bound: { side: p.s === "a" ? "after" : "before", id: p.id, inclusive: p.i === 1 }, order: p.o };
    }
  } catch {
    // fall through to the error below
  }
  throw new ApiError("bad_request", "The cursor is malformed: pass next_cursor or previous_cursor unchanged.", {
    entity: "query",
    errors: [{ code: "format", message: "is not a cursor issued by this server", path: ["cursor"] }],
  });
}

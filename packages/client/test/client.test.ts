// The client against @toolplane/mocks (msw handlers generated from the spec): what a consumer's own tests do.
import {
  fakeProviderGroup,
  handleCreateProviderGroup,
  handleGetProvider,
  handleGetProviderGroup,
  handleListProviderGroups,
  handleListSessionToolCalls,
} from "@toolplane/mocks";
import { HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createToolplaneClient, ToolplaneApiError, unwrap } from "../src/index.ts";

const baseUrl = "http://toolplane.test";
const mock = setupServer();
beforeAll(() => mock.listen({ onUnhandledRequest: "error" }));
afterEach(() => mock.resetHandlers());
afterAll(() => mock.close());

const client = createToolplaneClient({ baseUrl, apiKey: "tp_test_key", retries: 2 });
const unavailable = () =>
  HttpResponse.json(
    { __typename: "error", ok: false, status: 503, code: "service_unavailable", message: "busy" },
    { status: 503, headers: { "retry-after": "0" } },
  );

describe("@toolplane/client", () => {
  it("sends the API key and returns typed data", async () => {
    let authorization: string | null = null;
    const group = fakeProviderGroup();
    mock.use(
      handleGetProviderGroup(
        ({ request }) => {
          authorization = request.headers.get("authorization");
          return HttpResponse.json(group);
        },
        { baseUrl },
      ),
    );
    const data = await unwrap(
      client.GET("/provider-groups/{provider_group_id}", { params: { path: { provider_group_id: group.id } } }),
    );
    expect(data).toEqual(group);
    expect(authorization).toBe("Bearer tp_test_key");
  });

  it("answers with the spec's example when a handler is given no response", async () => {
    mock.use(handleCreateProviderGroup(undefined, { baseUrl }));
    const created = await unwrap(client.POST("/provider-groups", { body: { name: "Engineering tools" } }));
    expect(created.object).toBe("provider.group");
  });

  it("reads the catalog: a provider typed down to its auth methods and config schema", async () => {
    mock.use(handleGetProvider(undefined, { baseUrl }));
    const provider = await unwrap(
      client.GET("/providers/{provider_id}", { params: { path: { provider_id: "pro_01jqz7m3c8v4r2k9x5n6t0w1yc" } } }),
    );
    expect(provider).toMatchObject({ object: "provider", type: "catalog", slug: "github" });
    const method = provider.auth_methods[0];
    expect(method?.type).toBe("token");
    expect(method?.input_schema).toMatchObject({ required: ["token"] });
    expect(provider.current_version?.id).toBe(provider.versions[0]?.id);
  });

  it("throws ToolplaneApiError carrying the documented error body", async () => {
    mock.use(
      handleGetProviderGroup(
        () =>
          HttpResponse.json(
            {
              __typename: "error",
              ok: false,
              status: 404,
              code: "not_found",
              message: "Provider group x was not found.",
            },
            { status: 404, headers: { "x-request-id": "req_1" } },
          ),
        { baseUrl },
      ),
    );
    const error = await unwrap(
      client.GET("/provider-groups/{provider_group_id}", { params: { path: { provider_group_id: "x" } } }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolplaneApiError);
    expect(error).toMatchObject({ status: 404, code: "not_found", requestId: "req_1" });
    expect((error as ToolplaneApiError).body?.message).toBe("Provider group x was not found.");
  });

  it("iterates every page by following next_cursor", async () => {
    const groups = Array.from({ length: 5 }, () => fakeProviderGroup());
    const cursors: (string | null)[] = [];
    mock.use(
      handleListProviderGroups(
        ({ request }) => {
          const cursor = new URL(request.url).searchParams.get("cursor");
          cursors.push(cursor);
          const start = cursor ? Number(cursor) : 0;
          const more = start + 2 < groups.length;
          return HttpResponse.json({
            items: groups.slice(start, start + 2),
            pagination: {
              has_more_before: start > 0,
              has_more_after: more,
              next_cursor: more ? String(start + 2) : null,
              previous_cursor: null,
            },
          });
        },
        { baseUrl },
      ),
    );
    const seen: string[] = [];
    for await (const g of client.paginate("/provider-groups", { params: { query: { limit: 2 } } })) seen.push(g.id);
    expect(seen).toEqual(groups.map((g) => g.id));
    expect(cursors).toEqual([null, "2", "4"]);
  });

  it("retries idempotent requests on 503, honouring Retry-After", async () => {
    let calls = 0;
    mock.use(
      handleListProviderGroups(
        () => {
          calls += 1;
          if (calls < 3) return unavailable();
          return HttpResponse.json({
            items: [],
            pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
          });
        },
        { baseUrl },
      ),
    );
    expect((await unwrap(client.GET("/provider-groups"))).items).toEqual([]);
    expect(calls).toBe(3);
  });

  it("fills a path with ids from params.path on every page", async () => {
    const urls: string[] = [];
    mock.use(
      handleListSessionToolCalls(
        ({ request }) => {
          urls.push(new URL(request.url).pathname);
          return HttpResponse.json({
            items: [],
            pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
          });
        },
        { baseUrl },
      ),
    );
    const session_id = "ses_01jqz7m3c8v4r2k9x5n6t0w1ye";
    for await (const _ of client.paginate("/sessions/{session_id}/tool-calls", { params: { path: { session_id } } })) {
      // empty
    }
    expect(urls).toEqual([`/sessions/${session_id}/tool-calls`]);
  });

  it("requires path parameters at the type level (checked by pnpm typecheck, never run)", () => {
    const typeOnly = () => {
      // @ts-expect-error: a path with an id needs params.path
      client.paginate("/sessions/{session_id}/tool-calls");
      // @ts-expect-error: …and params alone without path is not enough
      client.paginate("/sessions/{session_id}/tool-calls", { params: { query: { limit: 5 } } });
      // @ts-expect-error: the id must be the path's own parameter
      client.paginate("/sessions/{session_id}/tool-calls", { params: { path: { provider_group_id: "x" } } });
      // @ts-expect-error: a path that is not a list
      client.paginate("/provider-groups/{provider_group_id}");
      client.paginate("/sessions/{session_id}/tool-calls", { params: { path: { session_id: "ses_x" } } });
      client.paginate("/provider-groups");
      client.paginate("/provider-groups", { params: { query: { limit: 5, order: "desc" } } });
    };
    expect(typeof typeOnly).toBe("function");
  });
});

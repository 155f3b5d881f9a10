import { describe, expect, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json } from "../../support/security.ts";
import {
  configRef,
  deploymentRef,
  everythingDeployment,
  githubSetup,
  sessionCounts,
} from "../sessions/session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const gh2 = fixture(() => githubSetup(t, t.client, "GitHub 2"));
const ev = fixture(() => everythingDeployment(t));

async function refusedCreate(body: unknown) {
  const before = await sessionCounts(t.db);
  const res = await t.fetch("/session-templates", json("POST", body));
  const error = (await res.json()) as { code: string; errors?: { path: unknown[] }[] };
  expect(await sessionCounts(t.db)).toEqual(before);
  return { status: res.status, error };
}

describe("session templates: errors", () => {
  it("writes nothing when a later entry is refused", async () => {
    const good = { provider_deployment: deploymentRef(ev.deployment.id) };
    const mismatch = await refusedCreate({
      name: "Half",
      providers: [
        good,
        { provider_deployment: deploymentRef(gh.deployment.id), provider_config: configRef(gh2.config.id) },
      ],
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.error.errors?.[0]?.path).toEqual(["providers", 1, "provider_config", "provider_config_id"]);
    const unknown = await refusedCreate({
      name: "Half",
      providers: [good, { session_template_id: "set_01jqz7m3c8v4r2k9x5n6t0w1yh" }],
    });
    expect(unknown.status).toBe(404);
    expect(unknown.error.errors?.[0]?.path).toEqual(["providers", 1, "session_template_id"]);
    const empty = await refusedCreate({ name: "Half", providers: [good, {}] });
    expect(empty.status).toBe(400);
  });

  it("answers 400 for malformed bodies", async () => {
    for (const body of [{}, { name: "" }, { name: "x", providers: [] }, { name: "x", extra: 1 }, { name: null }]) {
      const { status } = await refusedCreate(body);
      expect(status, JSON.stringify(body)).toBe(400);
    }
    const res = await t.fetch("/session-templates/set_01jqz7m3c8v4r2k9x5n6t0w1yh", json("PATCH", { name: null }));
    expect(res.status).toBe(400);
  });

  it("answers 404 for unknown templates", async () => {
    const id = "set_01jqz7m3c8v4r2k9x5n6t0w1yh";
    for (const res of [
      await t.fetch(`/session-templates/${id}`),
      await t.fetch(`/session-templates/${id}`, json("PATCH", { name: "x" })),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found", entity: "session.template" });
    }
  });
});

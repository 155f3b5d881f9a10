// `keys revoke` takes a key in every form `keys list` prints, and the key itself.
import { describe, expect, it } from "vitest";
import { createApiKey, displayPrefix, keyLookup, listApiKeys, revokeApiKey } from "../../src/auth/api-keys.ts";
import { useTestServer } from "../support/fixture.ts";

const t = useTestServer();

describe("keyLookup", () => {
  it("reads an id, the listed prefix in its spellings, the bare prefix and the whole key", () => {
    const key = `tp_abcdefghij12_${"A".repeat(43)}`;
    expect(keyLookup("key_01m85f60bkw6nnhesa3ddtnpvn")).toEqual({
      column: "id",
      value: "key_01m85f60bkw6nnhesa3ddtnpvn",
    });
    for (const form of [
      displayPrefix("abcdefghij12"),
      "tp_abcdefghij12_...",
      "tp_abcdefghij12_",
      "tp_abcdefghij12",
      "abcdefghij12",
      key,
      ` ${key}\n`,
    ]) {
      expect(keyLookup(form), form).toEqual({ column: "prefix", value: "abcdefghij12" });
    }
    for (const form of ["", "tp_", "tp_short_…", "ABCDEFGHIJ12", "key_", "abcdefghij123"]) {
      expect(keyLookup(form), form).toBeUndefined();
    }
  });
});

describe("revokeApiKey", () => {
  it("revokes by every form keys list prints, and by the key", async () => {
    const tenant = await t.createTenant("revoke forms");
    const listed = (prefix: string) => displayPrefix(prefix);
    const forms: ((k: { id: string; prefix: string; key: string }) => string)[] = [
      (k) => k.id,
      (k) => listed(k.prefix),
      (k) => k.prefix,
      (k) => k.key,
    ];
    for (const form of forms) {
      const { key, summary } = await createApiKey(t.db, tenant.instanceId, "to revoke");
      const revoked = await revokeApiKey(t.db, form({ id: summary.id, prefix: summary.prefix, key }));
      expect(revoked?.id).toBe(summary.id);
      expect(revoked?.revoked_at).toBeInstanceOf(Date);
    }
    const mine = (await listApiKeys(t.db)).filter((k) => k.instance_id === tenant.instanceId && k.name === "to revoke");
    expect(mine).toHaveLength(4);
    expect(mine.every((k) => k.revoked_at !== null)).toBe(true);
    expect(await revokeApiKey(t.db, "tp_nosuchprefix_…")).toBeUndefined();
  });
});

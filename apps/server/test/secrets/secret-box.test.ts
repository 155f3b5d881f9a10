import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { idempotencyAad } from "../../src/http/idempotency.ts";
import { configAad, vaultAad } from "../../src/resources/provider-configs/service.ts";
import { rotateSecrets } from "../../src/secrets/rotate.ts";
import { loadSecretKeys, SecretBox } from "../../src/secrets/secret-box.ts";
import { startTestServer } from "../support/server.ts";

const key = (id: string) => ({ id, key: randomBytes(32) });

describe("SecretBox", () => {
  it("round-trips, never shows the plaintext, and uses a fresh IV each time", () => {
    const box = new SecretBox([key("a")]);
    const one = box.encrypt("hunter2-secret", "row:1");
    const two = box.encrypt("hunter2-secret", "row:1");
    expect(one).not.toContain("hunter2");
    expect(one).not.toBe(two);
    expect(box.decrypt(one, "row:1")).toBe("hunter2-secret");
    expect(box.decryptJson(box.encryptJson({ a: [1] }, "x"), "x")).toEqual({ a: [1] });
  });

  it("refuses a ciphertext moved to another row, tampered with, or under an unknown key", () => {
    const box = new SecretBox([key("a")]);
    const token = box.encrypt("s", "row:1");
    expect(() => box.decrypt(token, "row:2")).toThrow();
    const parts = token.split(".");
    parts[4] = Buffer.from("x").toString("base64url");
    expect(() => box.decrypt(parts.join("."), "row:1")).toThrow();
    expect(() => new SecretBox([key("b")]).decrypt(token, "row:1")).toThrow(/key "a"/);
  });

  it("rotates: the first key encrypts, older keys still decrypt", () => {
    const old = key("old");
    const token = new SecretBox([old]).encrypt("s", "r");
    const rotated = new SecretBox([key("new"), old]);
    expect(rotated.decrypt(token, "r")).toBe("s");
    expect(rotated.needsRotation(token)).toBe(true);
    expect(rotated.needsRotation(rotated.encrypt("s", "r"))).toBe(false);
  });

  it("loads keys from the environment, or generates an owner-only key file once", () => {
    const a = randomBytes(32).toString("base64");
    const b = randomBytes(32).toString("base64");
    expect(loadSecretKeys(`new:${a},old:${b}`, undefined).map((k) => k.id)).toEqual(["new", "old"]);
    expect(loadSecretKeys(a, undefined)[0]?.id).toBe("k1");
    expect(() => new SecretBox(loadSecretKeys("c2hvcnQ=", undefined))).toThrow(/32 bytes/);
    expect(() => loadSecretKeys(undefined, undefined)).toThrow(/TOOLPLANE_SECRET_KEY is required/);

    const dir = mkdtempSync(join(tmpdir(), "toolplane-keys-"));
    const first = loadSecretKeys(undefined, dir);
    expect(statSync(join(dir, "secret.key")).mode & 0o777).toBe(0o600);
    expect(loadSecretKeys(undefined, dir)[0]?.key.equals(first[0]?.key ?? Buffer.alloc(0))).toBe(true);
    expect(readFileSync(join(dir, "secret.key"), "utf8")).toMatch(/^k1:/);
  });
});

describe("rotateSecrets", () => {
  it("re-encrypts stored configs and vaults under the new primary key, keeping them readable", async () => {
    const t = await startTestServer();
    try {
      const provider = await t.db
        .selectFrom("providers")
        .select("id")
        .where("slug", "=", "github")
        .executeTakeFirstOrThrow();
      const deployment = await unwrap(
        t.client.POST("/provider-deployments", { body: { name: "d", provider_id: provider.id } }),
      );
      const path = { provider_deployment_id: deployment.id };
      await unwrap(
        t.client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
          params: { path },
          body: { name: "v", data: { toolsets: "repos" } },
        }),
      );
      await unwrap(
        t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
          params: { path },
          body: { name: "c", config: { type: "inline", data: { toolsets: "issues" } } },
        }),
      );
      const next = key("next");
      const rotated = new SecretBox([next, t.secretKey]);
      // The vault and the config, and the answers of the three POSTs, which the client sent with an Idempotency-Key.
      expect(await rotateSecrets(t.db, rotated)).toBe(5);
      expect(await rotateSecrets(t.db, rotated)).toBe(0);

      const newOnly = new SecretBox([next]);
      const config = await t.db
        .selectFrom("provider_configs")
        .select(["id", "data_ciphertext"])
        .executeTakeFirstOrThrow();
      const vault = await t.db
        .selectFrom("provider_config_vaults")
        .select(["id", "data_ciphertext"])
        .executeTakeFirstOrThrow();
      expect(newOnly.decryptJson(config.data_ciphertext, configAad(config.id))).toEqual({ toolsets: "issues" });
      expect(newOnly.decryptJson(vault.data_ciphertext, vaultAad(vault.id))).toEqual({ toolsets: "repos" });
      const recorded = await t.db
        .selectFrom("idempotency_keys")
        .select(["id", "response_ciphertext"])
        .where("status", "=", 201)
        .orderBy("id")
        .executeTakeFirstOrThrow();
      expect(newOnly.decryptJson(recorded.response_ciphertext ?? "", idempotencyAad(recorded.id))).toEqual(deployment);
    } finally {
      await t.close();
    }
  });
});

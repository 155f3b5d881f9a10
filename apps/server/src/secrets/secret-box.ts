import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface SecretKey {
  /** Names the key inside every ciphertext, so old ciphertexts stay readable after a rotation. */
  id: string;
  key: Buffer;
}

const FORMAT = "v1";

/**
 * Encrypts secrets at rest with AES-256-GCM. The first key encrypts; every key decrypts. The additional
 * authenticated data binds a ciphertext to the row it belongs to, so a ciphertext copied into another row
 * does not decrypt.
 */
export class SecretBox {
  private readonly byId: Map<string, Buffer>;
  private readonly primary: SecretKey;

  constructor(keys: SecretKey[]) {
    const [primary] = keys;
    if (!primary) throw new Error("SecretBox needs at least one key");
    for (const k of keys) {
      if (k.key.length !== 32) throw new Error(`secret key ${k.id} must be 32 bytes, got ${k.key.length}`);
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(k.id))
        throw new Error(`secret key id "${k.id}" must match [A-Za-z0-9_-]{1,32}`);
    }
    this.primary = primary;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  encrypt(plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.primary.key, iv);
    cipher.setAAD(Buffer.from(aad));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return [FORMAT, this.primary.id, iv, cipher.getAuthTag(), body]
      .map((p) => (typeof p === "string" ? p : p.toString("base64url")))
      .join(".");
  }

  decrypt(token: string, aad: string): string {
    const [format, keyId, iv, tag, body] = token.split(".");
    const key = keyId === undefined ? undefined : this.byId.get(keyId);
    if (format !== FORMAT || !key || iv === undefined || tag === undefined || body === undefined) {
      throw new Error(`cannot decrypt: unknown format or key "${keyId ?? ""}"`);
    }
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
  }

  encryptJson(value: unknown, aad: string): string {
    return this.encrypt(JSON.stringify(value), aad);
  }

  decryptJson<T>(token: string, aad: string): T {
    return JSON.parse(this.decrypt(token, aad)) as T;
  }

  /** Whether a ciphertext was made with an older key (for re-encryption after a rotation). */
  needsRotation(token: string): boolean {
    return token.split(".")[1] !== this.primary.id;
  }
}

/**
 * `TOOLPLANE_SECRET_KEY`: one or more comma-separated `id:base64key` (or a bare base64 key, id `k1`) of 32 bytes;
 * the first encrypts. Without it, the embedded default keeps a generated key in `<dataDir>/secret.key`
 * (owner-only); a PostgreSQL deployment must set it, since every replica needs the same keys.
 */
export function loadSecretKeys(env: string | undefined, dataDir: string | undefined): SecretKey[] {
  if (env?.trim()) {
    return env
      .split(",")
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part, i) => {
        const sep = part.indexOf(":");
        const id = sep === -1 ? `k${i + 1}` : part.slice(0, sep);
        const key = Buffer.from(sep === -1 ? part : part.slice(sep + 1), "base64");
        return { id, key };
      });
  }
  if (!dataDir) {
    throw new Error("TOOLPLANE_SECRET_KEY is required with DATABASE_URL (generate one: openssl rand -base64 32)");
  }
  const file = join(dataDir, "secret.key");
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `k1:${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  }
  chmodSync(file, 0o600);
  return loadSecretKeys(readFileSync(file, "utf8"), undefined);
}

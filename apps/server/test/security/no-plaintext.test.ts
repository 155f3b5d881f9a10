import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ErrorBody, unwrap } from "@toolplane/client";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { configAad, vaultAad } from "../../src/resources/provider-configs/service.ts";
import { catalogProvider, dumpAllTables, loadTestProvider, RICH_CONFIG_SCHEMA } from "../support/catalog-fixtures.ts";
import { useTestServer } from "../support/fixture.ts";

/**
 * Stores configs and vaults holding distinctive secret values, then looks for those values everywhere the
 * database keeps anything: every row of every table (through SQL, on both engines) and, on PGlite, the raw
 * data directory (heap files and WAL); on PostgreSQL also the database's files when this process can read them.
 */
const t = useTestServer();

const secret = (label: string) => `sk-live-${label}-${randomBytes(12).toString("hex")}`;

/** The forms a careless implementation might store a value in. */
function encodings(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  return [value, bytes.toString("base64"), bytes.toString("base64url"), bytes.toString("hex")];
}

function findIn(haystack: Buffer, needles: string[]): string[] {
  return needles.filter((n) => haystack.includes(Buffer.from(n, "utf8")));
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

describe("no plaintext secrets at rest", () => {
  it("stores config and vault data only as ciphertext, and the app still uses it", async () => {
    const github = await catalogProvider(t.db, "github");
    const rich = await loadTestProvider(t.db, "rich-plaintext", {
      versions: [{ version: "1", config_schema: RICH_CONFIG_SCHEMA }],
    });
    const other = await t.createTenant("second tenant");
    const marker = `visible-marker-${randomBytes(6).toString("hex")}`;

    const secrets = {
      inlineToolsets: secret("inline-toolsets"),
      inlineApiKey: secret("inline-apikey"),
      nestedTag: secret("nested-tag"),
      vaultApiKey: secret("vault-apikey"),
      vaultOnly: secret("vault-only"),
      vaultKeyName: secret("vault-keyname"),
      otherTenant: secret("other-tenant"),
      deletedConfig: secret("deleted-config"),
      deletedVault: secret("deleted-vault"),
      rejected: secret("rejected"),
      badVault: secret("bad-vault"),
      clientSecret: secret("client-secret"),
    };

    const deploy = (name: string, providerId: string, client = t.client) =>
      unwrap(client.POST("/provider-deployments", { body: { name, provider_id: providerId } }));
    const inline = (deploymentId: string, name: string, data: Record<string, unknown>, client = t.client) =>
      client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: deploymentId } },
        body: { name, config: { type: "inline", data } },
      });
    const fromVault = (deploymentId: string, name: string, vaultId: string) =>
      t.client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: deploymentId } },
        body: { name, config: { type: "vault", provider_config_vault_id: vaultId } },
      });
    const vault = (deploymentId: string, name: string, data: Record<string, unknown>, client = t.client) =>
      unwrap(
        client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
          params: { path: { provider_deployment_id: deploymentId } },
          body: { name, data },
        }),
      );

    const gh = await deploy(`GitHub ${marker}`, github.providerId);
    const richA = await deploy("Rich A", rich.providerId);
    const richB = await deploy("Rich B", rich.providerId);

    const ghConfig = await unwrap(inline(gh.id, `Config ${marker}`, { toolsets: secrets.inlineToolsets }));
    const richData = {
      api_key: secrets.inlineApiKey,
      workspace: "prod",
      tags: ["plain", secrets.nestedTag],
      limits: { max_calls: 5 },
    };
    const richConfig = await unwrap(inline(richA.id, "Rich inline", richData));

    const vaultData = { api_key: secrets.vaultApiKey, workspace: "from-vault", limits: { max_calls: 1 } };
    const goodVault = await vault(richA.id, `Vault ${marker}`, vaultData);
    await vault(richA.id, "Unused vault", { [secrets.vaultKeyName]: secrets.vaultOnly });
    // The app decrypts the vault and validates it against each deployment's schema: once under the vault's
    // own deployment, once under another deployment of the provider.
    const copyA = await unwrap(fromVault(richA.id, "Copy in A", goodVault.id));
    const copyB = await unwrap(fromVault(richB.id, "Copy in B", goodVault.id));
    const badVault = await vault(richA.id, "Bad vault", { api_key: 1, workspace: `Bad ${secrets.badVault}` });
    const rejectedFromVault = await fromVault(richB.id, "Refused", badVault.id);
    expect(rejectedFromVault.response.status).toBe(400);
    expect((rejectedFromVault.error as ErrorBody).entity).toBe("provider.config_vault");
    expect((rejectedFromVault.error?.errors ?? []).map((e) => e.path)).toEqual(
      expect.arrayContaining([["api_key"], ["workspace"]]),
    );

    // Refused inline data is not stored at all.
    const refused = await inline(richA.id, "Refused inline", { api_key: secrets.rejected, workspace: 5 });
    expect(refused.response.status).toBe(400);

    // Data of deleted configs and vaults.
    const doomedConfig = await unwrap(inline(gh.id, "Doomed config", { toolsets: secrets.deletedConfig }));
    const doomedVault = await vault(gh.id, "Doomed vault", { toolsets: secrets.deletedVault });
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: { provider_deployment_id: gh.id, provider_config_id: doomedConfig.id } },
      }),
    );
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: { provider_deployment_id: gh.id, provider_config_vault_id: doomedVault.id } },
      }),
    );

    // Another tenant's secrets too.
    const theirs = await deploy("Theirs", github.providerId, other.client);
    await unwrap(inline(theirs.id, "Their config", { toolsets: secrets.otherTenant }, other.client));
    await vault(theirs.id, "Their vault", { toolsets: secrets.otherTenant }, other.client);

    // A deployment with a default config embeds only its preview.
    await unwrap(
      t.client.POST("/provider-deployments", {
        body: {
          name: "Uses config",
          provider_id: github.providerId,
          config: { type: "reference", provider_config_id: ghConfig.id },
        },
      }),
    );

    // An OAuth client secret (auth credentials) is stored the same way.
    await unwrap(
      t.client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: gh.id } },
        body: {
          name: "OAuth app",
          config: { type: "oauth", clientId: "client-id", clientSecret: secrets.clientSecret, scopes: [] },
        },
      }),
    );

    // The stored ciphertexts decrypt, with the server's key and the row's id, to exactly what was sent.
    const decryptConfig = async (id: string) => {
      const row = await t.db
        .selectFrom("provider_configs")
        .select("data_ciphertext")
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      return t.secrets.decryptJson(row.data_ciphertext, configAad(id));
    };
    expect(await decryptConfig(ghConfig.id)).toEqual({ toolsets: secrets.inlineToolsets });
    expect(await decryptConfig(richConfig.id)).toEqual(richData);
    expect(await decryptConfig(copyA.id)).toEqual(vaultData);
    expect(await decryptConfig(copyB.id)).toEqual(vaultData);
    const vaultRow = await t.db
      .selectFrom("provider_config_vaults")
      .select("data_ciphertext")
      .where("id", "=", goodVault.id)
      .executeTakeFirstOrThrow();
    expect(t.secrets.decryptJson(vaultRow.data_ciphertext, vaultAad(goodVault.id))).toEqual(vaultData);

    const needles = [
      ...Object.values(secrets).flatMap(encodings),
      ...[{ toolsets: secrets.inlineToolsets }, richData, vaultData].flatMap((d) => encodings(JSON.stringify(d))),
    ];

    // 1. Every row of every table, through SQL.
    const tables = await dumpAllTables(t.db);
    expect(Object.keys(tables)).toEqual(
      expect.arrayContaining(["provider_configs", "provider_config_vaults", "provider_deployments", "instances"]),
    );
    const sqlDump = Buffer.from(Object.values(tables).join("\n"), "utf8");
    // Control: the dump holds what was written (names are plaintext), so not finding the secrets means something.
    expect(sqlDump.includes(Buffer.from(marker))).toBe(true);
    expect(tables.provider_configs).toContain(`Config ${marker}`);
    expect(tables.provider_config_vaults).toContain(`Vault ${marker}`);
    const configRows = JSON.parse(tables.provider_configs ?? "[]") as { data_ciphertext: string }[];
    expect(configRows.length).toBeGreaterThanOrEqual(5);
    for (const row of configRows) expect(row.data_ciphertext).toMatch(/^v1\.test\./);
    for (const [table, text] of Object.entries(tables)) {
      expect(findIn(Buffer.from(text, "utf8"), needles), table).toEqual([]);
    }

    // 2. The raw storage, where this process can read it.
    if (t.pglite) {
      await sql`checkpoint`.execute(t.db);
      const raw = Buffer.from(await (await t.pglite.dumpDataDir("none")).arrayBuffer());
      expect(raw.includes(Buffer.from(marker))).toBe(true);
      expect(findIn(raw, needles)).toEqual([]);
    } else {
      await sql`checkpoint`.execute(t.db);
      const setting = await sql<{ dir: string; oid: number }>`
        select current_setting('data_directory') as dir, (select oid from pg_database where datname = current_database()) as oid`
        .execute(t.db)
        .catch(() => undefined);
      const row = setting?.rows[0];
      const dirs = row ? [join(row.dir, "base", String(row.oid)), join(row.dir, "pg_wal")] : [];
      let readable: string[] = [];
      try {
        readable = dirs.flatMap(filesUnder).filter((f) => statSync(f).size > 0);
        for (const f of readable.slice(0, 1)) readFileSync(f);
      } catch {
        readable = []; // not ours to read (another user's cluster): the SQL dump above is the check
      }
      if (readable.length > 0) {
        const found = new Set<string>();
        let sawMarker = false;
        for (const file of readable) {
          const bytes = readFileSync(file);
          if (bytes.includes(Buffer.from(marker))) sawMarker = true;
          for (const n of findIn(bytes, needles)) found.add(`${n} in ${file}`);
        }
        expect(sawMarker).toBe(true);
        expect([...found]).toEqual([]);
      }
    }
  });
});

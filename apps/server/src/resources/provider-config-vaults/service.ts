import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import { newId } from "../../lib/ids.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { childColumns, DeploymentChildren } from "../deployment-children.ts";
import { assertDataSize, describedChild, vaultAad } from "../provider-configs/service.ts";
import type { DeploymentRef } from "../provider-deployments/service.ts";

type VaultCreate = components["schemas"]["ProviderConfigVaultCreate"];
type Vault = components["schemas"]["ProviderConfigVault"];

export class ProviderConfigVaultService extends DeploymentChildren<"provider_config_vaults", Vault> {
  constructor(
    db: Db,
    private readonly secrets: SecretBox,
  ) {
    super(db, "provider_config_vaults", "provider.config_vault", describedChild("provider.config_vault"));
  }

  /** Stores the values encrypted; they are validated only when a config is made from the vault. */
  async create(deployment: DeploymentRef, body: VaultCreate): Promise<Vault> {
    assertDataSize(body.data, ["data"]);
    const id = newId("pcvt");
    const row = await this.db
      .insertInto("provider_config_vaults")
      .values({
        id,
        ...childColumns(deployment, body),
        data_ciphertext: this.secrets.encryptJson(body.data, vaultAad(id)),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return this.toApi(row);
  }
}

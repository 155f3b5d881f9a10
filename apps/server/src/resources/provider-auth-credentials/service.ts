import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import type { ListParams } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { childColumns, DeploymentChildren } from "../deployment-children.ts";
import type { DeploymentRef } from "../provider-deployments/service.ts";

type Credentials = components["schemas"]["ProviderAuthCredentials"];
type CredentialsCreate = components["schemas"]["ProviderAuthCredentialsCreate"];

export const ENTITY = "provider.auth_credentials";
export const clientSecretAad = (id: string) => `provider_auth_credentials:${id}`;

const toApi = (row: Row<"provider_auth_credentials">): Credentials => ({
  object: "provider.auth_credentials",
  id: row.id,
  type: row.type,
  name: row.name,
  description: row.description,
  metadata: row.metadata,
  provider_id: row.provider_id,
  client_id: row.client_id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
});

export class ProviderAuthCredentialsService extends DeploymentChildren<"provider_auth_credentials", Credentials> {
  constructor(
    db: Db,
    private readonly secrets: SecretBox,
  ) {
    super(db, "provider_auth_credentials", ENTITY, toApi);
  }

  listFiltered(deployment: DeploymentRef, query: ListParams & { id?: string[] }) {
    const ids = query.id;
    return this.list(deployment, query, (q) => (ids ? q.where("id", "in", ids) : q));
  }

  /** Registers the OAuth client; the secret is stored encrypted, bound to this row. */
  async create(deployment: DeploymentRef, body: CredentialsCreate): Promise<Credentials> {
    const id = newId("par");
    const row = await this.db
      .insertInto("provider_auth_credentials")
      .values({
        id,
        ...childColumns(deployment, body),
        type: body.config.type,
        client_id: body.config.clientId,
        client_secret_ciphertext: this.secrets.encrypt(body.config.clientSecret, clientSecretAad(id)),
        scopes: JSON.stringify(body.config.scopes ?? []),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toApi(row);
  }

  /** Refused while an auth config refreshes its tokens with these credentials. */
  override async delete(deployment: DeploymentRef, id: string): Promise<Credentials> {
    await this.find(deployment, id);
    const user = await this.db
      .selectFrom("provider_auth_configs")
      .select("id")
      .where("provider_auth_credentials_id", "=", id)
      .limit(1)
      .executeTakeFirst();
    if (user) {
      throw new ApiError("conflict", `Auth config ${user.id} uses credentials ${id}; delete that auth config first.`, {
        entity: ENTITY,
      });
    }
    return super.delete(deployment, id);
  }
}

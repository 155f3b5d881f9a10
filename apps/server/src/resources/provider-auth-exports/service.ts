import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { exportAad, exportValue, openCredential } from "../provider-auth-configs/credential-data.ts";
import type { AuthConfigScope } from "../provider-auth-configs/scope.ts";

type AuthExport = components["schemas"]["ProviderAuthExport"];
type AuthExportCreate = components["schemas"]["ProviderAuthExportCreate"];

/** Exports: the one place a secret leaves the server, so each keeps an encrypted copy of what it showed. */
export class ProviderAuthExportService {
  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
  ) {}

  async list({ authConfig }: AuthConfigScope, params: ListParams) {
    const query = this.db
      .selectFrom("provider_auth_exports")
      .selectAll()
      .where("provider_auth_config_id", "=", authConfig.id);
    const { rows, pagination } = await paginate(query, "provider_auth_exports.id", params);
    return { items: rows.map((r) => this.toApi(r)), pagination };
  }

  async get({ authConfig }: AuthConfigScope, id: string): Promise<AuthExport> {
    const row = await this.db
      .selectFrom("provider_auth_exports")
      .selectAll()
      .where("provider_auth_config_id", "=", authConfig.id)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound("provider.auth_export", id);
    return this.toApi(row);
  }

  async create({ authConfig }: AuthConfigScope, body: AuthExportCreate): Promise<AuthExport> {
    if (!authConfig.credential_ciphertext) {
      throw new ApiError(
        "conflict",
        `Auth config ${authConfig.id} is ${authConfig.status} and holds no credential data yet.`,
        {
          entity: "provider.auth_config",
        },
      );
    }
    const value = exportValue(openCredential(this.secrets, authConfig.id, authConfig.credential_ciphertext));
    const id = newId("pace");
    const row = await this.db
      .insertInto("provider_auth_exports")
      .values({
        id,
        instance_id: authConfig.instance_id,
        provider_auth_config_id: authConfig.id,
        note: body.note,
        metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
        value_ciphertext: this.secrets.encryptJson(value, exportAad(id)),
        created_at: new Date(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return this.toApi(row);
  }

  private toApi(row: Row<"provider_auth_exports">): AuthExport {
    return {
      object: "provider.auth_export",
      id: row.id,
      note: row.note,
      metadata: row.metadata,
      provider_auth_config_id: row.provider_auth_config_id,
      value: this.secrets.decryptJson<AuthExport["value"]>(row.value_ciphertext, exportAad(row.id)),
      created_at: iso(row.created_at),
    };
  }
}

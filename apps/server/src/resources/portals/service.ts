import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { insertWithUniqueSlug } from "../../lib/slugged-insert.ts";
import { iso } from "../../lib/time.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { endSessions } from "../sessions/service.ts";

type Portal = components["schemas"]["Portal"];
type PortalCreate = components["schemas"]["PortalCreate"];
type PortalUpdate = components["schemas"]["PortalUpdate"];
type OidcUpdate = components["schemas"]["PortalOidcUpdate"];

/** What the OIDC sign-in reads: the settings with the client secret decrypted. */
export interface PortalOidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string | null;
  scopes: string[];
  groupsClaim: string;
  groupMapping: { claim_value: string; consumer_group_id: string }[];
}

const DEFAULT_SCOPES = ["openid", "email", "profile"];
const oidcSecretAad = (portalId: string) => `portal.oidc.client_secret:${portalId}`;

/** `https`, or `http` on a loopback address (a provider on the same machine, as in tests and development). */
function assertIssuer(issuer: string): void {
  const url = new URL(issuer);
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback)) return;
  const message = "The issuer must be an https URL (http only on a loopback address).";
  throw new ApiError("invalid_data", message, {
    entity: "body",
    errors: [{ code: "invalid", message, path: ["auth", "oidc", "issuer"] }],
  });
}

export const PORTAL_ENTITY = "portal";

export class PortalService {
  constructor(
    private readonly db: Db,
    private readonly publicUrl: string,
    private readonly secrets: SecretBox,
  ) {}

  async list(instanceId: string, params: ListParams) {
    const query = this.db.selectFrom("portals").selectAll().where("instance_id", "=", instanceId);
    const { rows, pagination } = await paginate(query, "portals.id", params);
    return { items: rows.map((r) => this.toApi(r)), pagination };
  }

  async get(instanceId: string, id: string): Promise<Portal> {
    return this.toApi(await this.find(instanceId, id));
  }

  async create(instanceId: string, body: PortalCreate): Promise<Portal> {
    const now = new Date();
    const row = await insertWithUniqueSlug(this.db, "portals", instanceId, body.name, (slug) =>
      this.db
        .insertInto("portals")
        .values({
          id: newId("ptl"),
          instance_id: instanceId,
          name: body.name,
          description: body.description ?? null,
          slug,
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) => oc.doNothing())
        .returningAll()
        .executeTakeFirst(),
    );
    return this.toApi(row);
  }

  async update(instanceId: string, id: string, body: PortalUpdate): Promise<Portal> {
    const brandName = body.brand?.name === undefined ? body.brand_name : body.brand.name;
    const expiry = body.auth?.session_expiry_time_in_seconds ?? body.session_expiry_time_in_seconds;
    const brand = body.brand ?? {};
    const row = await this.db
      .updateTable("portals")
      .set({
        ...describedPatch(body),
        ...(brandName === undefined ? {} : { brand_name: brandName }),
        ...(brand.logo_url === undefined ? {} : { brand_logo_url: brand.logo_url }),
        ...(brand.primary_color === undefined ? {} : { brand_primary_color: brand.primary_color }),
        ...(brand.background_color === undefined ? {} : { brand_background_color: brand.background_color }),
        ...(expiry === undefined ? {} : { session_expiry_seconds: expiry }),
        ...(body.status === undefined ? {} : { status: body.status }),
        ...(body.auth?.oidc === undefined ? {} : this.oidcColumns(id, body.auth.oidc)),
      })
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(PORTAL_ENTITY, id);
    return this.toApi(row);
  }

  /**
   * Deletes the portal; its consumer access, consumers and invitations go with it (ON DELETE CASCADE), consumer
   * groups stay. The sessions its consumers started end in the same transaction: nothing allows them any more.
   */
  async delete(instanceId: string, id: string): Promise<Portal> {
    const row = await this.db.transaction().execute(async (trx) => {
      const started = await trx
        .selectFrom("sessions")
        .select("id")
        .where("instance_id", "=", instanceId)
        .where("portal_id", "=", id)
        .execute();
      await endSessions(
        trx,
        started.map((s) => s.id),
        "The portal the session was started from was deleted.",
      );
      return trx
        .deleteFrom("portals")
        .where("instance_id", "=", instanceId)
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirst();
    });
    if (!row) throw ApiError.notFound(PORTAL_ENTITY, id);
    return this.toApi(row);
  }

  /**
   * The OIDC columns of an update. An omitted `client_secret` keeps the stored one (it is write-only, so a client
   * that read the portal cannot send it back).
   */
  private oidcColumns(portalId: string, oidc: OidcUpdate | null) {
    if (oidc === null) {
      return {
        oidc_issuer: null,
        oidc_client_id: null,
        oidc_client_secret_ciphertext: null,
        oidc_scopes: null,
        oidc_groups_claim: null,
        oidc_group_mapping: null,
      };
    }
    assertIssuer(oidc.issuer);
    return {
      oidc_issuer: oidc.issuer,
      oidc_client_id: oidc.client_id,
      ...(oidc.client_secret === undefined
        ? {}
        : { oidc_client_secret_ciphertext: this.secrets.encrypt(oidc.client_secret, oidcSecretAad(portalId)) }),
      oidc_scopes: JSON.stringify([...new Set(["openid", ...(oidc.scopes ?? DEFAULT_SCOPES)])]),
      oidc_groups_claim: oidc.groups_claim ?? "groups",
      oidc_group_mapping: JSON.stringify(oidc.group_mapping ?? []),
    };
  }

  /** The portal's OIDC settings with the secret decrypted, or null when it has none. */
  oidcSettings(row: Row<"portals">): PortalOidcSettings | null {
    if (!row.oidc_issuer || !row.oidc_client_id) return null;
    return {
      issuer: row.oidc_issuer,
      clientId: row.oidc_client_id,
      clientSecret: row.oidc_client_secret_ciphertext
        ? this.secrets.decrypt(row.oidc_client_secret_ciphertext, oidcSecretAad(row.id))
        : null,
      scopes: row.oidc_scopes ?? DEFAULT_SCOPES,
      groupsClaim: row.oidc_groups_claim ?? "groups",
      groupMapping: row.oidc_group_mapping ?? [],
    };
  }

  /** The portal page's address (`urls[0]`); the OIDC callback and invitation links live under it. */
  pageUrl(portalId: string): string {
    return `${this.publicUrl}/p/${portalId}`;
  }

  async find(instanceId: string, id: string): Promise<Row<"portals">> {
    const row = await this.db
      .selectFrom("portals")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(PORTAL_ENTITY, id);
    return row;
  }

  private toApi(row: Row<"portals">): Portal {
    return {
      object: "portal",
      id: row.id,
      status: row.status as Portal["status"],
      name: row.name,
      slug: row.slug,
      description: row.description,
      auth: {
        object: "portal.auth",
        session_expiry_time_in_seconds: row.session_expiry_seconds,
        oidc:
          row.oidc_issuer && row.oidc_client_id
            ? {
                issuer: row.oidc_issuer,
                client_id: row.oidc_client_id,
                has_client_secret: row.oidc_client_secret_ciphertext !== null,
                scopes: row.oidc_scopes ?? DEFAULT_SCOPES,
                groups_claim: row.oidc_groups_claim ?? "groups",
                group_mapping: row.oidc_group_mapping ?? [],
                redirect_uri: `${this.pageUrl(row.id)}/sign-in/oidc/callback`,
              }
            : null,
      },
      urls: [{ type: "portal", url: this.pageUrl(row.id) }],
      brand: {
        name: row.brand_name,
        logo_url: row.brand_logo_url,
        primary_color: row.brand_primary_color,
        background_color: row.brand_background_color,
      },
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    };
  }
}

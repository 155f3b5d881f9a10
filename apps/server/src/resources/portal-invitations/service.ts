import { randomBytes } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import { digest, type PortalConsumerService, type SignedIn } from "../portal-consumers/service.ts";
import type { PortalService } from "../portals/service.ts";

type Invitation = components["schemas"]["PortalInvitation"];
type InvitationCreate = components["schemas"]["PortalInvitationCreate"];

const ENTITY = "portal.invitation";
const DEFAULT_EXPIRY_SECONDS = 7 * 24 * 3600;

/** Why an invitation link cannot be accepted; the portal page says it in words. */
export type InvitationRefusal = "unknown" | "expired" | "accepted" | "revoked";

/** Single-use links that let a person join a portal's consumer group. Only the link's digest is stored. */
export class PortalInvitationService {
  constructor(
    private readonly db: Db,
    private readonly portals: PortalService,
    private readonly consumers: PortalConsumerService,
  ) {}

  async list(instanceId: string, portalId: string, params: ListParams) {
    await this.portals.find(instanceId, portalId);
    const query = this.db.selectFrom("portal_invitations").selectAll().where("portal_id", "=", portalId);
    const { rows, pagination } = await paginate(query, "portal_invitations.id", params);
    return { items: rows.map((r) => toApi(r, null)), pagination };
  }

  async get(instanceId: string, portalId: string, id: string): Promise<Invitation> {
    return toApi(await this.find(instanceId, portalId, id), null);
  }

  async create(instanceId: string, portalId: string, body: InvitationCreate): Promise<Invitation> {
    const portal = await this.portals.find(instanceId, portalId);
    if (portal.status !== "active") {
      throw new ApiError("conflict", `Portal ${portalId} is archived; make it active to invite consumers.`, {
        entity: "portal",
      });
    }
    const token = `tpi_${randomBytes(32).toString("base64url")}`;
    const now = new Date();
    const row = await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("consumer_groups")
        .values({ id: body.consumer_group_id, instance_id: instanceId })
        .onConflict((oc) => oc.columns(["instance_id", "id"]).doNothing())
        .execute();
      return trx
        .insertInto("portal_invitations")
        .values({
          id: newId("pci"),
          instance_id: instanceId,
          portal_id: portalId,
          consumer_group_id: body.consumer_group_id,
          token_hash: digest(token),
          expires_at: new Date(now.getTime() + (body.expires_in_seconds ?? DEFAULT_EXPIRY_SECONDS) * 1000),
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return toApi(row, `${this.portals.pageUrl(portalId)}/invitations/${token}`);
  }

  async revoke(instanceId: string, portalId: string, id: string): Promise<Invitation> {
    await this.find(instanceId, portalId, id);
    const revoked = await this.db
      .updateTable("portal_invitations")
      .set({ status: "revoked", updated_at: new Date() })
      .where("id", "=", id)
      .where("status", "=", "pending")
      .where("expires_at", ">", new Date())
      .returningAll()
      .executeTakeFirst();
    return toApi(revoked ?? (await this.find(instanceId, portalId, id)), null);
  }

  /** Whether a link can be accepted now: the invitation, or why not. */
  async check(portalId: string, token: string): Promise<Row<"portal_invitations"> | InvitationRefusal> {
    const row = await this.db
      .selectFrom("portal_invitations")
      .selectAll()
      .where("portal_id", "=", portalId)
      .where("token_hash", "=", digest(token))
      .executeTakeFirst();
    if (!row) return "unknown";
    const status = statusOf(row);
    return status === "pending" ? row : status;
  }

  /**
   * Accepts a link: marks it used and signs a new consumer of its group in, in one transaction, so two
   * concurrent accepts of one link make one consumer.
   */
  async accept(portal: Row<"portals">, token: string): Promise<SignedIn | InvitationRefusal> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom("portal_invitations")
        .selectAll()
        .where("portal_id", "=", portal.id)
        .where("token_hash", "=", digest(token))
        .forUpdate()
        .executeTakeFirst();
      if (!row) return "unknown";
      const status = statusOf(row);
      if (status !== "pending") return status;
      const signedIn = await this.consumers.signIn(
        portal,
        {
          method: "invitation",
          identity: row.id,
          subject: null,
          name: null,
          email: null,
          groups: [row.consumer_group_id],
        },
        trx,
      );
      const now = new Date();
      await trx
        .updateTable("portal_invitations")
        .set({ status: "accepted", consumer_id: signedIn.consumer.id, accepted_at: now, updated_at: now })
        .where("id", "=", row.id)
        .execute();
      return signedIn;
    });
  }

  private async find(instanceId: string, portalId: string, id: string): Promise<Row<"portal_invitations">> {
    await this.portals.find(instanceId, portalId);
    const row = await this.db
      .selectFrom("portal_invitations")
      .selectAll()
      .where("portal_id", "=", portalId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return row;
  }
}

function statusOf(r: Row<"portal_invitations">): Invitation["status"] {
  if (r.status === "pending" && r.expires_at.getTime() <= Date.now()) return "expired";
  return r.status;
}

function toApi(r: Row<"portal_invitations">, url: string | null): Invitation {
  return {
    object: "portal.invitation",
    id: r.id,
    portal_id: r.portal_id,
    consumer_group_id: r.consumer_group_id,
    status: statusOf(r),
    url,
    consumer_id: r.consumer_id,
    expires_at: iso(r.expires_at),
    accepted_at: r.accepted_at ? iso(r.accepted_at) : null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

import { ApiError } from "@toolplane/server-stubs";
import { Router } from "express";
import type { Db } from "../db/database.ts";

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

/**
 * The public page of an active portal (`urls[0].url`): its brand and the session templates its consumers can
 * use. Archived or unknown portals are a 404. The page names nothing secret.
 */
export function portalPageRouter(db: Db): Router {
  const router = Router();
  router.get("/p/:portalId", async (req, res, next) => {
    try {
      const portal = await db
        .selectFrom("portals")
        .select(["id", "name", "brand_name", "description"])
        .where("id", "=", req.params.portalId)
        .where("status", "=", "active")
        .executeTakeFirst();
      if (!portal) throw new ApiError("not_found", "No such portal.", { entity: "portal" });
      const templates = await db
        .selectFrom("portal_consumer_access as a")
        .innerJoin("session_templates as t", "t.id", "a.session_template_id")
        .select(["t.name", "t.description"])
        .distinct()
        .where("a.portal_id", "=", portal.id)
        .orderBy("t.name")
        .execute();
      const title = escapeHtml(portal.brand_name ?? portal.name);
      const items = templates
        .map(
          (t) =>
            `<li><strong>${escapeHtml(t.name)}</strong>${t.description ? ` — ${escapeHtml(t.description)}` : ""}</li>`,
        )
        .join("\n");
      res.type("html").send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 48rem; margin: 2rem auto">
<h1>${title}</h1>
${portal.description ? `<p>${escapeHtml(portal.description)}</p>` : ""}
<h2>Available tool sets</h2>
${items ? `<ul>\n${items}\n</ul>` : "<p>Nothing is shared on this portal yet.</p>"}
</body></html>
`);
    } catch (err) {
      next(err);
    }
  });
  return router;
}

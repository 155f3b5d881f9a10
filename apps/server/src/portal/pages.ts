import { randomBytes } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import express, { type ErrorRequestHandler, type Request, type Response, Router } from "express";
import type { AppDeps } from "../app.ts";
import type { Row } from "../db/schema.ts";
import { OAuthFlowStore } from "../oauth/flows.ts";
import { PortalConsumerService, type SignedIn } from "../resources/portal-consumers/service.ts";
import { type InvitationRefusal, PortalInvitationService } from "../resources/portal-invitations/service.ts";
import { PortalService } from "../resources/portals/service.ts";
import { ProviderDeploymentService } from "../resources/provider-deployments/service.ts";
import { ProviderSetupSessionService } from "../resources/provider-setup-sessions/service.ts";
import { SessionService } from "../resources/sessions/service.ts";
import { clientConfigs } from "./client-configs.ts";
import {
  csrfMatches,
  csrfToken,
  randomSecret,
  readCookie,
  SESSION_COOKIE,
  setCookie,
  VISITOR_COOKIE,
} from "./cookies.ts";
import { type Brand, brandOf, type Html, html, NO_BRAND, page } from "./html.ts";
import { Marketplace, type MarketplaceTemplate } from "./marketplace.ts";
import { OidcSignIn } from "./oidc.ts";

export type PortalPageDeps = Pick<AppDeps, "db" | "publicUrl" | "secrets">;

/** One request to a portal's pages: the portal, who is signed in, and how to answer. */
interface Visit {
  req: Request;
  res: Response;
  portal: Row<"portals">;
  brand: Brand;
  /** The signed-in consumer, or null. */
  who: SignedIn | null;
  /** The visitor cookie's value: the CSRF secret of forms shown before sign-in. */
  visitor: string;
  nonce: string;
  base: string;
}

const REFUSALS: Record<InvitationRefusal, { status: number; title: string; message: string }> = {
  unknown: {
    status: 404,
    title: "Invitation not found",
    message: "This invitation link is not valid. Check that you copied all of it.",
  },
  expired: {
    status: 410,
    title: "Invitation expired",
    message: "This invitation link has expired. Ask for a new one.",
  },
  accepted: {
    status: 410,
    title: "Invitation already used",
    message:
      "This invitation link was already used; each link works once. Ask for a new one if you need to join again.",
  },
  revoked: { status: 410, title: "Invitation withdrawn", message: "This invitation was withdrawn. Ask for a new one." },
};

/** An id from the path: anything not shaped like one of ours (NUL, stray bytes) is as unknown as a missing id. */
const ID = /^[a-z]{3,4}_[0-9a-z]{26}$/;
function pathId(req: Request, name: string): string {
  const value = String(req.params[name]);
  if (!ID.test(value)) throw new ApiError("not_found", "There is nothing at this address.");
  return value;
}

const fmt = (d: Date) => `${d.toISOString().replace("T", " ").slice(0, 16)} UTC`;

/**
 * The portal's pages under `/p/{portal_id}` (no API key: consumers' browsers open them). HTML with one inline
 * stylesheet and script under a per-response nonce, nothing from elsewhere; every form carries a CSRF token;
 * unknown and archived portals, and every refusal, are HTML pages with the right status.
 */
export function portalRouter(deps: PortalPageDeps): Router {
  const portals = new PortalService(deps.db, deps.publicUrl, deps.secrets);
  const consumers = new PortalConsumerService(deps.db, portals);
  const invitations = new PortalInvitationService(deps.db, portals, consumers);
  const sessions = new SessionService(deps.db, deps.publicUrl);
  const market = new Marketplace(
    deps.db,
    sessions,
    deps.publicUrl,
    new ProviderDeploymentService(deps.db),
    new ProviderSetupSessionService(new OAuthFlowStore(deps.db), deps.publicUrl),
  );
  const oidc = new OidcSignIn(portals, consumers);
  const secure = deps.publicUrl.startsWith("https:");
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: "16kb", parameterLimit: 20 });

  const cookie = (v: Visit, name: string, value: string, maxAge: number) =>
    setCookie(v.res, v.base, secure, name, value, maxAge);
  const signIn = (v: Visit, signedIn: SignedIn) => {
    cookie(v, SESSION_COOKIE, signedIn.token, v.portal.session_expiry_seconds);
    v.res.redirect(303, v.base);
  };
  const send = (v: Pick<Visit, "res" | "brand" | "nonce">, status: number, title: string, body: Html, extra?: Html) => {
    v.res
      .status(status)
      .type("html")
      .send(page({ brand: v.brand, title, nonce: v.nonce, headerExtra: extra }, body));
  };
  const csrf = (secret: string) => html`<input type="hidden" name="csrf" value="${csrfToken(secret)}">`;
  /** A form shown to the signed-in consumer: its token is bound to their sign-in. */
  const memberForm = (v: Visit & { who: SignedIn }, action: string, inner: Html) =>
    html`<form method="post" action="${v.base}${action}">${csrf(v.who.token)}${inner}</form>`;

  /** Loads the visit, or answers a 404 page for an unknown or archived portal. */
  const visit =
    (run: (v: Visit) => Promise<void>) => async (req: Request, res: Response, next: (err?: unknown) => void) => {
      const nonce = randomBytes(16).toString("base64");
      res.set({
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
        "content-security-policy": `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      });
      try {
        const portal = await deps.db
          .selectFrom("portals")
          .selectAll()
          .where("id", "=", ID.test(String(req.params.portalId)) ? String(req.params.portalId) : "")
          .where("status", "=", "active")
          .executeTakeFirst();
        if (!portal) {
          send(
            { res, brand: NO_BRAND, nonce },
            404,
            "Portal not found",
            html`<div class="card error"><h1>Portal not found</h1>
<p>There is no portal at this address. Check the link you were given, or ask whoever sent it.</p></div>`,
          );
          return;
        }
        const token = readCookie(req, SESSION_COOKIE);
        const base = `/p/${portal.id}`;
        let visitor = readCookie(req, VISITOR_COOKIE);
        const v: Visit = {
          req,
          res,
          portal,
          brand: brandOf(portal),
          who: token ? await consumers.authenticate(portal.id, token) : null,
          visitor: visitor ?? "",
          nonce,
          base,
        };
        // Failures thrown from here on are the portal's: its error page wears its brand.
        res.locals.portalBrand = v.brand;
        if (!visitor || visitor.length < 40) {
          visitor = randomSecret();
          v.visitor = visitor;
          cookie(v, VISITOR_COOKIE, visitor, 86400);
        }
        await run(v);
      } catch (err) {
        next(err);
      }
    };
  /** The same, for the signed-in consumer's pages: anyone else goes to the sign-in page. */
  const member = (run: (v: Visit & { who: SignedIn }) => Promise<void>) =>
    visit(async (v) => {
      if (!v.who) {
        v.res.redirect(303, v.base);
        return;
      }
      await run(v as Visit & { who: SignedIn });
    });
  /** A POST from a signed-in consumer: refused unless its CSRF token matches their sign-in. */
  const memberPost = (run: (v: Visit & { who: SignedIn }) => Promise<void>) =>
    member(async (v) => {
      if (!csrfMatches(v.who.token, v.req.body?.csrf)) return refuseCsrf(v);
      await run(v);
    });
  const refuseCsrf = (v: Visit) =>
    send(
      v,
      403,
      "Form expired",
      html`<div class="card error"><h1>This form has expired</h1>
<p>The page you sent it from is out of date or came from another site. <a href="${v.base}">Go back to the portal</a> and try again.</p></div>`,
    );

  const header = (v: Visit) =>
    v.who
      ? html`<span>${v.who.consumer.name ?? v.who.consumer.email ?? "Signed in"}</span>${memberForm(
          v as Visit & { who: SignedIn },
          "/sign-out",
          html`<button type="submit">Sign out</button>`,
        )}`
      : undefined;

  router.get(
    "/p/:portalId",
    visit(async (v) => {
      if (!v.who) {
        const settings = portals.oidcSettings(v.portal);
        send(
          v,
          200,
          "Sign in",
          html`<div class="card"><h1>Sign in to ${v.brand.name}</h1>
${v.portal.description ? html`<p>${v.portal.description}</p>` : ""}
${settings ? html`<p><a class="button" href="${v.base}/sign-in/oidc">Sign in with single sign-on</a></p>` : ""}
<p class="muted">Were you sent an invitation link? Open it to join${settings ? " without single sign-on" : ""}.</p></div>`,
        );
        return;
      }
      await marketplacePage(v as Visit & { who: SignedIn });
    }),
  );

  const marketplacePage = async (v: Visit & { who: SignedIn }, notice?: Html) => {
    const [templates, own, calls] = await Promise.all([
      market.templates(v.portal.id, v.who.consumer),
      market.ownSessions(v.who.consumer.id),
      market.recentToolCalls(v.who.consumer.id),
    ]);
    const card = (t: MarketplaceTemplate) => html`<section class="card" aria-labelledby="t-${t.id}">
<h3 id="t-${t.id}">${t.name}</h3>${t.description ? html`<p>${t.description}</p>` : ""}
${t.providers.map(
  (
    p,
  ) => html`<p><strong>${p.name}</strong>${p.description ? html` <span class="muted">— ${p.description}</span>` : ""}</p>
${p.ownAccount ? html`<p class="muted">Uses your own ${p.name} account${p.ownAccount.authConfigId ? " (connected)" : ": you sign in to it when you connect"}.</p>` : ""}
${p.tools.length ? html`<details><summary>${p.tools.length} tool${p.tools.length === 1 ? "" : "s"}</summary><ul class="tools">${p.tools.map((tool) => html`<li><code>${tool.name}</code>${tool.description ? html` — ${tool.description}` : ""}</li>`)}</ul></details>` : ""}`,
)}
${memberForm(
  v,
  `/templates/${t.id}/sessions`,
  html`<label>Connection name (optional)<input type="text" name="name" maxlength="255" placeholder="${t.name}"></label><button type="submit">Connect ${t.name}</button>`,
)}</section>`;
    const sessionRow = (s: Awaited<ReturnType<typeof market.ownSessions>>[number]) => html`<tr>
<td>${s.name ?? s.templateName ?? s.id}<br><span class="muted">${s.templateName ?? ""} · ${fmt(s.createdAt)}</span></td>
<td><code>${s.connectionUrl}</code></td>
<td>${memberForm(v, `/sessions/${s.id}/rename`, html`<div class="row"><label>New name<input type="text" name="name" required maxlength="255" value="${s.name ?? ""}"></label><button type="submit" class="secondary">Rename</button></div>`)}
${memberForm(v, `/sessions/${s.id}/end`, html`<button type="submit" class="secondary">End connection</button>`)}</td></tr>`;
    send(
      v,
      200,
      "Marketplace",
      html`${notice}<h1>Servers you can connect</h1>
${templates.length ? html`<div class="grid">${templates.map(card)}</div>` : html`<div class="card notice"><p>Nothing is shared with you on this portal yet. Ask the portal's owner for access.</p></div>`}
<h2>Your connections</h2>
${own.length ? html`<div class="card"><table><thead><tr><th>Name</th><th>Connection URL</th><th>Actions</th></tr></thead><tbody>${own.map(sessionRow)}</tbody></table></div>` : html`<p class="muted">You have no connections yet.</p>`}
<h2>Your recent tool calls</h2>
${calls.length ? html`<div class="card"><table><thead><tr><th>When</th><th>Connection</th><th>Tool</th><th>Status</th></tr></thead><tbody>${calls.map((c) => html`<tr><td>${fmt(c.createdAt)}</td><td>${c.sessionName ?? ""}</td><td><code>${c.toolKey}</code></td><td>${c.status}</td></tr>`)}</tbody></table></div>` : html`<p class="muted">No tool calls yet.</p>`}`,
      header(v),
    );
  };

  router.post(
    "/p/:portalId/templates/:templateId/sessions",
    form,
    memberPost(async (v) => {
      const name =
        typeof v.req.body.name === "string" && v.req.body.name.trim() ? v.req.body.name.trim().slice(0, 255) : null;
      const started = await market.startSession(v.portal, v.who, pathId(v.req, "templateId"), name);
      if (started.type === "connect") {
        // A link, not a redirect: the page's CSP (form-action 'self') would stop a form's redirect to the provider.
        send(
          v,
          200,
          "Sign in first",
          html`<div class="card notice"><h1>Connect your ${started.providerName} account first</h1>
<p>This server works with your own ${started.providerName} account. Sign in there and allow access; you come back here to finish connecting. The account stays yours: nobody else on ${v.brand.name} uses it.</p>
<p><a class="button" href="${started.url}">Sign in to ${started.providerName}</a></p>
<p><a href="${v.base}">Back to the marketplace</a></p></div>`,
          header(v),
        );
        return;
      }
      const { session } = started;
      const url = session.connection_url ?? "";
      const configs = clientConfigs(session.name ?? "toolplane", url, session.secret ?? "");
      send(
        v,
        201,
        "Connected",
        html`<div class="card notice"><h1>${session.name ?? "Connection"} is ready</h1>
<p><strong>Copy the secret now: it is shown only once.</strong> Anyone with the URL and the secret can use this connection; end it on the portal when you no longer need it.</p>
<p>Connection URL</p><pre><code id="url">${url}</code></pre><button type="button" data-copy="url">Copy URL</button>
<p>Secret (send it as <code>Authorization: Bearer …</code>)</p><pre><code id="secret">${session.secret}</code></pre><button type="button" data-copy="secret">Copy secret</button></div>
<h2>Add it to your AI client</h2>
${configs.map(
  (
    c,
    i,
  ) => html`<section class="card"><h3>${c.client}</h3><p class="muted">${c.where}</p><pre><code id="cfg-${i}">${c.text}</code></pre>
<button type="button" data-copy="cfg-${i}">Copy</button></section>`,
)}
<p><a class="button" href="${v.base}">Back to the marketplace</a></p>`,
        header(v),
      );
    }),
  );

  /** Where a consumer's own OAuth sign-in returns: finish the connection, or say why it failed. */
  router.get(
    "/p/:portalId/templates/:templateId/connected",
    member(async (v) => {
      const templateId = pathId(v.req, "templateId");
      const query = new URL(v.req.originalUrl, deps.publicUrl).searchParams;
      const flowId = query.get("provider_setup_session_id");
      // The outcome is read from the setup session (it must be this consumer's), never from the query.
      const flow = flowId && ID.test(flowId) ? await market.ownConnectionFlow(v.who.consumer.id, flowId) : undefined;
      if (!flow) throw new ApiError("not_found", "This sign-in is not one of yours. Start again from the marketplace.");
      const name = (query.get("name") ?? "").slice(0, 255);
      const again = (label: string) =>
        memberForm(
          v,
          `/templates/${templateId}/sessions`,
          html`<input type="hidden" name="name" value="${name}"><button type="submit">${label}</button>`,
        );
      if (flow.status === "completed") {
        send(
          v,
          200,
          "Account connected",
          html`<div class="card notice"><h1>Your ${flow.providerName} account is connected</h1>
<p>Finish to get the connection URL for your AI client.</p>${again("Finish connecting")}</div>`,
          header(v),
        );
        return;
      }
      send(
        v,
        400,
        "Sign-in not completed",
        html`<div class="card error"><h1>Your ${flow.providerName} sign-in was not completed</h1>
<p>${flow.failureReason ?? "The sign-in was left before it finished."}</p>${again("Try again")}
<p><a href="${v.base}">Back to the marketplace</a></p></div>`,
        header(v),
      );
    }),
  );

  router.post(
    "/p/:portalId/sessions/:sessionId/rename",
    form,
    memberPost(async (v) => {
      const name = typeof v.req.body.name === "string" ? v.req.body.name.trim().slice(0, 255) : "";
      if (!name) throw new ApiError("bad_request", "A connection needs a name.");
      await market.rename(v.who.consumer.id, pathId(v.req, "sessionId"), name);
      v.res.redirect(303, v.base);
    }),
  );

  router.post(
    "/p/:portalId/sessions/:sessionId/end",
    form,
    memberPost(async (v) => {
      await market.end(v.who.consumer.id, pathId(v.req, "sessionId"));
      v.res.redirect(303, v.base);
    }),
  );

  router.post(
    "/p/:portalId/sign-out",
    form,
    memberPost(async (v) => {
      await consumers.signOut(v.who.consumerSessionId);
      cookie(v, SESSION_COOKIE, "", 0);
      v.res.redirect(303, v.base);
    }),
  );

  router.get(
    "/p/:portalId/invitations/:token",
    visit(async (v) => {
      const invitation = await invitations.check(v.portal.id, String(v.req.params.token));
      if (typeof invitation === "string") return refuseInvitation(v, invitation);
      send(
        v,
        200,
        "Invitation",
        html`<div class="card"><h1>Join ${v.brand.name}</h1>
<p>You were invited to use the servers ${v.brand.name} shares with its members. The link works once and expires ${fmt(invitation.expires_at)}.</p>
<form method="post" action="${v.base}/invitations/${String(v.req.params.token)}">${csrf(v.visitor)}<button type="submit">Accept and sign in</button></form></div>`,
      );
    }),
  );

  router.post(
    "/p/:portalId/invitations/:token",
    form,
    visit(async (v) => {
      if (!csrfMatches(readCookie(v.req, VISITOR_COOKIE), v.req.body?.csrf)) return refuseCsrf(v);
      const accepted = await invitations.accept(v.portal, String(v.req.params.token));
      if (typeof accepted === "string") return refuseInvitation(v, accepted);
      signIn(v, accepted);
    }),
  );

  const refuseInvitation = (v: Visit, why: InvitationRefusal) => {
    const r = REFUSALS[why];
    send(v, r.status, r.title, html`<div class="card error"><h1>${r.title}</h1><p>${r.message}</p></div>`);
  };

  router.get(
    "/p/:portalId/sign-in/oidc",
    visit(async (v) => {
      const start = await oidc.start(v.portal);
      cookie(v, start.cookie.name, start.cookie.value, 600);
      v.res.redirect(302, start.location);
    }),
  );

  router.get(
    "/p/:portalId/sign-in/oidc/callback",
    visit(async (v) => {
      const signedIn = await oidc.finish(v.portal, new URL(v.req.originalUrl, deps.publicUrl), v.req);
      cookie(v, oidc.cookieName, "", 0);
      signIn(v, signedIn);
    }),
  );

  /** Refusals and failures on these pages are HTML pages, not the API's JSON. */
  const pageErrors: ErrorRequestHandler = (err, req, res, next) => {
    // An undecodable path is the app's 400 like anywhere else.
    if (!req.path.startsWith("/p/") || res.headersSent || err instanceof URIError) return next(err);
    // Our refusals, and the form parser's (too large, malformed), are the visitor's to read; anything else is ours.
    const parser = err as { status?: unknown; expose?: unknown };
    const parserStatus = parser.expose === true && typeof parser.status === "number" ? parser.status : null;
    const known = err instanceof ApiError ? err.status < 500 || err.code === "bad_gateway" : parserStatus !== null;
    if (!known) req.log.error({ err }, "portal page failed");
    const status = err instanceof ApiError ? err.status : (parserStatus ?? 500);
    const message = known
      ? err instanceof ApiError
        ? err.message
        : "The form could not be read."
      : `Something went wrong on our side. Reference: ${String(req.id)}.`;
    const title =
      status === 403 ? "Access denied" : status === 404 ? "Not found" : status < 500 ? "Cannot do that" : "Error";
    const nonce = String(res.getHeader("content-security-policy") ?? "").match(/'nonce-([^']+)'/)?.[1] ?? "";
    const brand: Brand = res.locals.portalBrand ?? NO_BRAND;
    send(
      { res, brand, nonce },
      status,
      title,
      html`<div class="card error"><h1>${title}</h1><p>${message}</p>
<p><a href="/p/${String(req.params.portalId ?? req.path.split("/")[2] ?? "")}">Back to the portal</a></p></div>`,
    );
  };
  router.use(pageErrors);
  return router;
}

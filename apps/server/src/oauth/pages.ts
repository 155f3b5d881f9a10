import express, { type Request, type Response, Router } from "express";
import { FLOW_COOKIE, type FlowRunnerDeps, OAuthFlowRunner, type PageResult } from "./flow-runner.ts";
import { CLIENT_METADATA_PATH, clientMetadataDocument } from "./mcp-oauth.ts";

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const queryOf = (req: Request) => Object.fromEntries(new URL(req.originalUrl, "http://x").searchParams);

function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return value.join("=");
  }
  return undefined;
}

const layout = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto">
<h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`;

function send(res: Response, result: PageResult, formAction = "") {
  // Nothing here may be cached or leak through a Referer: URLs carry single-use codes and keys.
  res.set("cache-control", "no-store").set("referrer-policy", "no-referrer");
  if (result.type === "redirect") {
    if (result.cookie) res.append("set-cookie", result.cookie);
    res.redirect(302, result.location);
    return;
  }
  if (result.type === "page") {
    res
      .status(result.status)
      .type("html")
      .send(layout(result.title, `<p>${escapeHtml(result.message)}</p>`));
    return;
  }
  const inputs = result.fields
    .map(
      (f) =>
        `<p><label>${escapeHtml(f.label)}<br><input type="password" name="${escapeHtml(f.name)}" autocomplete="off"${f.required ? " required" : ""}></label></p>`,
    )
    .join("\n");
  res
    .status(200)
    .type("html")
    .send(
      layout(
        result.title,
        `<form method="post" action="${escapeHtml(formAction)}">\n${inputs}\n<p><button type="submit">Connect</button></p>\n</form>`,
      ),
    );
}

/**
 * The browser pages of OAuth setups and setup sessions (outside API-key auth: a user's browser opens them).
 * A link works only with its random `token`; unknown ids, wrong tokens and other tenants' setups all get the
 * same 404 page.
 */
export function oauthPageRouter(deps: FlowRunnerDeps): Router {
  const runner = new OAuthFlowRunner(deps);
  const router = Router();
  const page =
    (run: (req: Request) => Promise<PageResult>) =>
    async (req: Request, res: Response, next: (err: unknown) => void) => {
      try {
        send(res, await run(req), req.originalUrl);
      } catch (err) {
        next(err);
      }
    };
  router.get(
    "/oauth/:segment/:id/start",
    page((req) => runner.start(String(req.params.segment), String(req.params.id), queryOf(req).token)),
  );
  router.post(
    "/oauth/:segment/:id/start",
    express.urlencoded({ extended: false, limit: "16kb" }),
    page((req) =>
      runner.submitToken(String(req.params.segment), String(req.params.id), queryOf(req).token, req.body ?? {}),
    ),
  );
  // Public: an authorization server that supports Client ID Metadata Documents fetches it from the client_id URL.
  router.get(CLIENT_METADATA_PATH, (_req, res) => {
    res.set("cache-control", "public, max-age=3600").json(clientMetadataDocument(deps.publicUrl));
  });
  router.get(
    "/oauth/callback",
    page((req) => runner.callback(queryOf(req), cookie(req, FLOW_COOKIE))),
  );
  return router;
}

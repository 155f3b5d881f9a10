import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Router } from "express";

const require = createRequire(import.meta.url);

/** `/openapi.json` (the bundled spec) and `/docs`: a Redoc page whose script is served from here, not a CDN. */
export function docsRouter(spec: object): Router {
  const router = Router();
  const specJson = JSON.stringify(spec);
  const redocScript = readFileSync(require.resolve("redoc/bundles/redoc.standalone.js"), "utf8");
  const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Toolplane API reference</title>
</head>
<body>
  <div id="redoc"></div>
  <script src="/docs/redoc.standalone.js"></script>
  <script>Redoc.init(${specJson.replace(/</g, "\\u003c")}, { hideDownloadButton: false }, document.getElementById("redoc"));</script>
</body>
</html>
`;
  router.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(specJson);
  });
  router.get("/docs", (_req, res) => {
    res.type("html").send(page);
  });
  router.get("/docs/redoc.standalone.js", (_req, res) => {
    res.type("application/javascript").set("Cache-Control", "public, max-age=3600").send(redocScript);
  });
  return router;
}

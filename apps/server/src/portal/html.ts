import type { Row } from "../db/schema.ts";

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

/** A tagged template that escapes every interpolated value unless it is already markup (`Html`). */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}
type Part = Html | string | number | null | undefined | false | Html[];
export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? "";
  parts.forEach((part, i) => {
    out += render(part) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}
function render(part: Part): string {
  if (part === null || part === undefined || part === false) return "";
  if (Array.isArray(part)) return part.map(render).join("");
  if (part instanceof Html) return part.value;
  return escapeHtml(String(part));
}

const DEFAULT_PRIMARY = "#1f4fd1";
const DEFAULT_BACKGROUND = "#f6f7f9";

/** Black or white, whichever contrasts more with the colour (WCAG relative luminance). */
function textOn(hex: string): string {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.179 ? "#000000" : "#ffffff";
}

/** The brand as the page uses it. */
export interface Brand {
  name: string;
  logoUrl: string | null;
  primary: string;
  background: string;
}

export const brandOf = (portal: Row<"portals">): Brand => ({
  name: portal.brand_name ?? portal.name,
  logoUrl: portal.brand_logo_url,
  primary: portal.brand_primary_color ?? DEFAULT_PRIMARY,
  background: portal.brand_background_color ?? DEFAULT_BACKGROUND,
});

/** The neutral brand of pages that have no portal to speak for (an unknown portal). */
export const NO_BRAND: Brand = {
  name: "Toolplane",
  logoUrl: null,
  primary: DEFAULT_PRIMARY,
  background: DEFAULT_BACKGROUND,
};

const css = (brand: Brand) => `
:root { --primary: ${brand.primary}; --on-primary: ${textOn(brand.primary)}; --bg: ${brand.background};
  --text: ${textOn(brand.background)}; color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg);
  color: var(--text); }
header { background: var(--primary); color: var(--on-primary); padding: .75rem 1rem; display: flex; gap: .75rem;
  align-items: center; flex-wrap: wrap; }
header img { height: 2rem; width: auto; }
header .brand { font-size: 1.25rem; font-weight: 600; margin: 0; flex: 1; }
header form { margin: 0; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
.card { background: #fff; color: #111; border-radius: .5rem; padding: 1rem; margin: 0 0 1rem;
  box-shadow: 0 1px 3px rgba(0,0,0,.15); overflow-wrap: anywhere; }
.grid { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); }
.grid .card { margin: 0; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; } h3 { font-size: 1.1rem; margin: 0 0 .5rem; }
button, .button { font: inherit; background: var(--primary); color: var(--on-primary); border: 0; border-radius: .375rem;
  padding: .5rem 1rem; cursor: pointer; text-decoration: none; display: inline-block; min-height: 2.75rem; }
button.secondary { background: #fff; color: #111; border: 1px solid #888; }
header button { background: transparent; color: var(--on-primary); border: 1px solid currentColor; }
input[type=text] { font: inherit; padding: .5rem; border: 1px solid #888; border-radius: .375rem; width: 100%;
  min-height: 2.75rem; }
label { display: block; margin: .5rem 0; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
pre { background: #f1f3f5; color: #111; padding: .75rem; border-radius: .375rem; overflow-x: auto; white-space: pre-wrap;
  word-break: break-all; margin: .25rem 0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9rem; }
.row { display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; }
.row > * { flex: 1 1 12rem; }
.row > button, .row > form { flex: 0 0 auto; }
.muted { color: #555; } .error { border-left: 4px solid #b91c1c; } .notice { border-left: 4px solid var(--primary); }
table { width: 100%; border-collapse: collapse; } th, td { text-align: left; padding: .375rem; border-bottom: 1px solid #ddd; }
ul.tools { padding-left: 1.25rem; margin: .25rem 0; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: #fff; color: #111; padding: .5rem; }
@media (max-width: 30rem) { table thead { display: none; } table td { display: block; border: 0; padding: .125rem 0; }
  table tr { display: block; border-bottom: 1px solid #ddd; padding: .5rem 0; } }
`;

/** Copies the text of the element a button names; the only script the pages have. */
const COPY_SCRIPT = `document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]"); if (!b) return;
  var text = document.getElementById(b.getAttribute("data-copy")).textContent;
  navigator.clipboard.writeText(text).then(function () { b.textContent = "Copied"; },
    function () { b.textContent = "Select and copy"; });
});`;

export interface PageOptions {
  brand: Brand;
  title: string;
  /** Markup after the brand name in the header (the consumer's name and the sign-out form). */
  headerExtra?: Html;
  nonce: string;
}

/** A whole page: one inline stylesheet and script under a nonce, nothing loaded from elsewhere. */
export function page(options: PageOptions, body: Html): string {
  const { brand, nonce } = options;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${options.title} · ${brand.name}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<style nonce="${nonce}">${new Html(css(brand))}</style></head>
<body><a class="skip" href="#main">Skip to content</a>
<header>${brand.logoUrl ? html`<img src="${brand.logoUrl}" alt="">` : ""}<p class="brand">${brand.name}</p>${options.headerExtra}</header>
<main id="main">
${body}
</main>
<script nonce="${nonce}">${new Html(COPY_SCRIPT)}</script>
</body></html>
`.value;
}

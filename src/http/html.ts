import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

/** Text for HTML: every value a page shows goes through this. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// the dashboard's look (web/src/styles.css: its colours, system fonts, cards, fields and buttons),
// in one inline style that the policy below allows by its hash
const STYLE = `:root{--ink:#1f2328;--muted:#57606a;--line:#d0d7de;--card:#fff;--accent:#1d4ed8;--radius:8px;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#f6f8fa}
*,*::before,*::after{box-sizing:border-box}body{margin:0;padding:2rem 1rem}a{color:var(--accent)}
:focus-visible{outline:3px solid #c2410c;outline-offset:2px}
.brand{display:flex;gap:.5rem;align-items:center;max-width:28rem;margin:0 auto 1rem;font-weight:700;font-size:1.2rem}
main{max-width:28rem;margin:0 auto;padding:1.5rem;background:var(--card);border:1px solid var(--line);border-radius:var(--radius);overflow-wrap:anywhere}
h1{font-size:1.6rem;line-height:1.25;margin:0 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .75rem}
.code{font:700 1.6rem ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.1em;white-space:nowrap}
.error{padding:.75rem 1rem;border-radius:var(--radius);background:#fee2e2;color:#7f1d1d}.muted{color:var(--muted)}
form{margin:1.5rem 0}label{display:block;font-weight:600;margin:0 0 1rem}
label.check{display:flex;gap:.5rem;align-items:flex-start;font-weight:400;margin:.5rem 0 1rem}
input[type=email],input[type=text]{display:block;width:100%;min-height:2.5rem;margin-top:.25rem;padding:.4rem .6rem;border:1px solid #8c959f;border-radius:var(--radius);background:var(--card);color:var(--ink);font:inherit;font-weight:400}
input[type=checkbox],input[type=radio]{flex:none;width:1.1rem;height:1.1rem;margin:.2rem 0 0}
button{min-height:2.5rem;padding:.4rem 1rem;border:1px solid var(--accent);border-radius:var(--radius);background:var(--accent);color:#fff;font:inherit;cursor:pointer}
button.secondary{background:var(--card);color:var(--ink);border-color:var(--line)}`;

// the dashboard's mark (web/public/favicon.svg) inline: the policy loads no image
const BRAND = `<header class="brand"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="24" height="24" aria-hidden="true"><rect width="32" height="32" rx="6" fill="#1d4ed8"/><path d="M6 10h20v12H6z" fill="none" stroke="#fff" stroke-width="2"/><path d="M6 10l10 7 10-7" fill="none" stroke="#fff" stroke-width="2"/></svg>Posthorn</header>`;

/**
 * The policy of these pages: nothing loads (no script at all), the one inline style is allowed by
 * its hash, forms post only to this origin, and no other site may frame a page (clickjacking an
 * unsubscribe or a pairing approval).
 */
export const PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers that keep a page of ours out of other sites' frames and run nothing but its own markup. */
export function sendPageSecurityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', PAGE_CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff');
}

/**
 * A small self-contained page (the CLI pairing page, the unsubscribe preference page) in a card
 * like the dashboard's signed-out pages; `brand` puts Posthorn's name above it (not on pages a
 * sender's readers see).
 */
export function htmlPage(title: string, body: string, brand = false): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>${esc(title)} · Posthorn</title>
<style>${STYLE}</style></head>
<body>${brand ? BRAND : ''}<main><h1>${esc(title)}</h1>${body}</main></body></html>`;
}

/** Answers with a page, never cached and sending no referrer (its URL holds a token). */
export function sendPage(reply: FastifyReply, status: number, title: string, body: string, brand = false) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(htmlPage(title, body, brand));
}

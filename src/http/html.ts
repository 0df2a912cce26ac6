import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

/** Text for HTML: every value a page shows goes through this. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}
.code{font:700 1.6rem ui-monospace,monospace;letter-spacing:.1em}.error{color:#b00020}form{margin:1.5rem 0}
input[type=email],input[type=text]{width:100%;padding:.4rem;margin:.2rem 0 .8rem}button{padding:.5rem 1rem}`;

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

/** A small self-contained page (the CLI pairing page, the unsubscribe preference page). */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>${esc(title)} · Posthorn</title>
<style>${STYLE}</style></head>
<body><h1>${esc(title)}</h1>${body}</body></html>`;
}

/** Answers with a page, never cached and sending no referrer (its URL holds a token). */
export function sendPage(reply: FastifyReply, status: number, title: string, body: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(htmlPage(title, body));
}

import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { DomainContext } from '../core/context.ts';
import { targetPolicy } from '../webhooks/policy.ts';
import { pinnedLookup, resolveTarget } from '../webhooks/target.ts';
import { previewTemplate } from './preview.ts';

/**
 * Checks a marketer understands, run on a message as a recipient would get it (issue 49, build
 * item 3): images without alt text, images heavier than people wait for, HTML past the size
 * where Gmail clips a message, links that answer an error (fetched from this server with the
 * webhooks' address guard: public addresses only unless the operator allows private ones), and
 * SpamAssassin's offline score where it is installed. Each is advice, never a refusal: a campaign
 * is sent whatever they say.
 */

export type ContentCheckId = 'alt_text' | 'image_size' | 'html_size' | 'links' | 'spam_score';
export interface ContentCheck {
  id: ContentCheckId;
  status: 'ok' | 'warning' | 'skipped';
  message: string;
}

/** Gmail clips a message whose HTML is over 102 KB ("[Message clipped]", its footer hidden). */
export const GMAIL_CLIP_BYTES = 102 * 1024;
/** An image heavier than this is slow on a phone's connection. */
export const IMAGE_WARN_BYTES = 1024 * 1024;
const MAX_LINKS = 25;
const MAX_IMAGES = 25;
const FETCH_TIMEOUT_MS = 5_000;
const FETCHES_AT_ONCE = 4;
const SPAM_TIMEOUT_MS = 20_000;
const SPAM_WARN_SCORE = 5;

const attr = (tag: string, name: string) =>
  new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i')
    .exec(tag)
    ?.slice(2)
    .find((v) => v !== undefined);
const decode = (v: string) =>
  v
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");

/** The message's images: their tags' src and alt (a 1x1 tracking pixel is not an image a person sees). */
function imagesOf(html: string) {
  return [...html.matchAll(/<img\b[^>]*>/gi)]
    .map((m) => m[0])
    .filter((tag) => !(attr(tag, 'width') === '1' && attr(tag, 'height') === '1'))
    .map((tag) => ({ src: decode(attr(tag, 'src') ?? ''), alt: attr(tag, 'alt') }));
}

/** The message's web links, each once (mailto:, tel: and anchors are not fetched). */
function linksOf(html: string): string[] {
  const hrefs = [...html.matchAll(/<a\b[^>]*>/gi)].map((m) => decode(attr(m[0], 'href') ?? ''));
  return [...new Set(hrefs.filter((h) => /^https?:\/\//i.test(h)))];
}

/** What a URL answers to HEAD (GET when HEAD is refused): its status and length, or why it could not be asked. */
async function probe(
  ctx: Pick<DomainContext, 'config' | 'db'>,
  href: string,
): Promise<{ status: number; bytes: number | null } | { error: string }> {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return { error: 'is not a valid address' };
  }
  if (url.username || url.password) return { error: 'carries a user name or password' };
  let addresses: Awaited<ReturnType<typeof resolveTarget>>;
  try {
    addresses = await resolveTarget(url, targetPolicy(ctx), {
      field: 'The link',
      rule: 'links are checked on public addresses only',
    });
  } catch (err) {
    return { error: (err as Error).message.replace(/^The link /, '') };
  }
  const ask = (method: 'HEAD' | 'GET') =>
    new Promise<{ status: number; bytes: number | null }>((resolve, reject) => {
      const client = url.protocol === 'https:' ? https : http;
      const request = client.request(
        url,
        {
          method,
          headers: { 'user-agent': 'Posthorn-LinkCheck/1' },
          lookup: pinnedLookup(addresses),
          timeout: FETCH_TIMEOUT_MS,
        },
        (response) => {
          response.resume();
          const length = Number(response.headers['content-length']);
          resolve({ status: response.statusCode ?? 0, bytes: Number.isFinite(length) ? length : null });
          request.destroy();
        },
      );
      request.on('timeout', () =>
        request.destroy(new Error(`did not answer within ${FETCH_TIMEOUT_MS / 1000} s`)),
      );
      request.on('error', reject);
      request.end();
    });
  try {
    const head = await ask('HEAD');
    return head.status === 405 || head.status === 501 ? await ask('GET') : head;
  } catch (err) {
    return { error: `could not be reached (${(err as Error).message})` };
  }
}

/** Runs `fn` over `items`, a few at a time. */
async function eachFew<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCHES_AT_ONCE, items.length) }, worker));
  return results;
}

const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;
const listed = (items: string[]) =>
  items.slice(0, 5).join(', ') + (items.length > 5 ? ` and ${items.length - 5} more` : '');

/** An image's size: an image kept in Posthorn from the assets table, any other as its server says. */
async function imageBytes(ctx: Pick<DomainContext, 'config' | 'db'>, src: string): Promise<number | null> {
  const own = `${ctx.config.publicUrl.replace(/\/$/, '')}/assets/`;
  if (src.startsWith(own)) {
    const row = await ctx.db
      .selectFrom('assets')
      .select('bytes')
      .where('key', '=', src.slice(own.length))
      .executeTakeFirst()
      .catch(() => undefined);
    if (row) return Number(row.bytes);
  }
  const answer = await probe(ctx, src);
  return 'status' in answer && answer.status < 400 ? answer.bytes : null;
}

async function imageChecks(ctx: Pick<DomainContext, 'config' | 'db'>, html: string): Promise<ContentCheck[]> {
  const images = imagesOf(html);
  if (images.length === 0)
    return [
      { id: 'alt_text', status: 'ok', message: 'No images' },
      { id: 'image_size', status: 'ok', message: 'No images' },
    ];
  // MJML writes alt="" for an image given none: empty is missing too
  const noAlt = images.filter((i) => (i.alt ?? '').trim() === '');
  const sized = await eachFew(
    images.slice(0, MAX_IMAGES).filter((i) => /^https?:\/\//i.test(i.src)),
    async (i) => ({
      src: i.src,
      bytes: await imageBytes(ctx, i.src),
    }),
  );
  const heavy = sized.filter((s) => s.bytes !== null && s.bytes > IMAGE_WARN_BYTES);
  return [
    noAlt.length === 0
      ? { id: 'alt_text', status: 'ok', message: `Every image has alt text (${images.length})` }
      : {
          id: 'alt_text',
          status: 'warning',
          message: `${noAlt.length} of ${images.length} images have no alt text: people who do not load images, and screen readers, get nothing in their place. Describe each image in a few words (${listed(noAlt.map((i) => i.src || 'an image without an address'))})`,
        },
    heavy.length === 0
      ? { id: 'image_size', status: 'ok', message: `No image is over ${kb(IMAGE_WARN_BYTES)}` }
      : {
          id: 'image_size',
          status: 'warning',
          message: `${heavy.length} ${heavy.length === 1 ? 'image is' : 'images are'} over ${kb(IMAGE_WARN_BYTES)} and slow to open on a phone; make them smaller: ${listed(heavy.map((h) => `${h.src} (${kb(h.bytes as number)})`))}`,
        },
  ];
}

async function linkCheck(ctx: Pick<DomainContext, 'config' | 'db'>, html: string): Promise<ContentCheck> {
  const own = ctx.config.publicUrl.replace(/\/$/, '');
  const links = linksOf(html).filter((l) => !l.startsWith(own));
  if (links.length === 0) return { id: 'links', status: 'ok', message: 'No web links to check' };
  const checked = links.slice(0, MAX_LINKS);
  const answers = await eachFew(checked, (l) => probe(ctx, l));
  const broken = checked.flatMap((l, i) => {
    const a = answers[i];
    if ('error' in a) return [`${l} ${a.error}`];
    return a.status >= 400 ? [`${l} answered ${a.status}`] : [];
  });
  const more = links.length > MAX_LINKS ? ` (the first ${MAX_LINKS} of ${links.length})` : '';
  return broken.length === 0
    ? { id: 'links', status: 'ok', message: `Every link answered${more}: ${checked.length} checked` }
    : {
        id: 'links',
        status: 'warning',
        message: `${broken.length} of ${checked.length} links do not work${more}; fix or remove them: ${listed(broken)}`,
      };
}

/** SpamAssassin's offline score (`spamassassin -L -t`), or null when it is not installed here. */
function spamScore(message: Buffer): Promise<{ score: number; rules: string } | null> {
  return new Promise((resolve) => {
    const child = spawn('spamassassin', ['-L', '-t'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const out: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), SPAM_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.on('error', () => resolve(null));
    child.stdin.on('error', () => {});
    child.on('close', () => {
      clearTimeout(timer);
      const head = Buffer.concat(out)
        .toString('utf8')
        .split(/\r?\n\r?\n/)[0]
        .replace(/\r?\n[ \t]+/g, ' ');
      const status = /^X-Spam-Status: .*$/m.exec(head)?.[0] ?? '';
      const score = /score=(-?\d+(?:\.\d+)?)/.exec(status)?.[1];
      const rules = /tests=(.*?)(?:\s+\w+=|$)/.exec(status)?.[1] ?? '';
      resolve(
        score === undefined
          ? null
          : {
              score: Number(score),
              rules: rules
                .split(/[\s,]+/)
                .filter(Boolean)
                .join(', '),
            },
      );
    });
    child.stdin.end(message);
  });
}

async function spamCheck(message: {
  from: string;
  subject: string;
  html: string;
  text?: string;
}): Promise<ContentCheck> {
  const raw = await new MailComposer({
    from: message.from,
    to: 'reader@example.com',
    subject: message.subject,
    html: message.html,
    ...(message.text ? { text: message.text } : {}),
  })
    .compile()
    .build();
  const scored = await spamScore(raw);
  if (!scored)
    return { id: 'spam_score', status: 'skipped', message: 'SpamAssassin is not installed on this server' };
  const rules = scored.rules ? ` (${scored.rules})` : '';
  return scored.score >= SPAM_WARN_SCORE
    ? {
        id: 'spam_score',
        status: 'warning',
        message: `SpamAssassin scores it ${scored.score}, at or over ${SPAM_WARN_SCORE}, where many filters call it spam${rules}`,
      }
    : {
        id: 'spam_score',
        status: 'ok',
        message: `SpamAssassin scores it ${scored.score}, under ${SPAM_WARN_SCORE}${rules}`,
      };
}

/** Every check of one rendered message, run at once. */
export async function checkContentQuality(
  ctx: Pick<DomainContext, 'config' | 'db'>,
  message: { from: string; subject: string; html: string; text?: string },
): Promise<ContentCheck[]> {
  const bytes = Buffer.byteLength(message.html, 'utf8');
  const size: ContentCheck =
    bytes > GMAIL_CLIP_BYTES
      ? {
          id: 'html_size',
          status: 'warning',
          message: `The HTML is ${kb(bytes)}: Gmail cuts a message off after ${kb(GMAIL_CLIP_BYTES)} and hides the rest, footer and unsubscribe link included. Shorten it, or link to the rest`,
        }
      : {
          id: 'html_size',
          status: 'ok',
          message: `The HTML is ${kb(bytes)}, under Gmail's ${kb(GMAIL_CLIP_BYTES)}`,
        };
  const [images, links, spam] = await Promise.all([
    imageChecks(ctx, message.html),
    linkCheck(ctx, message.html),
    spamCheck(message),
  ]);
  return [...images, size, links, spam];
}

/** GET /templates/{id}/checks: the checks on the draft (or `version`), rendered with the variables' defaults. */
export async function templateContentChecks(
  ctx: DomainContext,
  projectId: string,
  id: string,
  version: number | undefined,
) {
  const preview = await previewTemplate(ctx, projectId, id, version === undefined ? {} : { version });
  return {
    object: 'content_checks' as const,
    checks: await checkContentQuality(ctx, {
      from: `sender@${new URL(ctx.config.publicUrl).hostname}`,
      subject: preview.subject,
      html: preview.html,
      text: preview.text,
    }),
  };
}

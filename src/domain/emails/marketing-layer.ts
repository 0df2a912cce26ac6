import { htmlToText } from '../../mail/html-to-text.ts';
import {
  addFooter,
  fillPreferencesUrl,
  listUnsubscribeHeaders,
  PREFERENCES_URL_STANDIN,
  trackLinks,
} from '../../mail/marketing.ts';
import type { DomainContext } from '../core/context.ts';
import { publicUrls } from '../marketing/tokens.ts';
import { PLACEHOLDER_ADDRESS } from '../plans/project-facts.ts';
import type { EmailRow } from '../sending/delivery-outcomes.ts';

const LAYERED_STREAMS: EmailRow['stream'][] = ['marketing', 'automation'];

/**
 * Marks a campaign's test message (POST /campaigns/{id}/test), on the message itself too. A test to
 * a member who is no contact of the project has no contact to unsubscribe: its link goes to
 * {public_url}/u/test, a page saying it was a test, instead of the message being refused. Only
 * the campaign test send writes it (x-posthorn- headers cannot be given by a sender).
 */
export const TEST_MESSAGE_HEADER = 'X-Posthorn-Test';

/** The unsubscribe link of a test message without a contact: a page that says it was a test. */
export function testUnsubscribeUrl(ctx: Pick<DomainContext, 'config'>): string {
  return `${ctx.config.publicUrl.replace(/\/+$/, '')}/u/test`;
}

const isTestMessage = (row: EmailRow) => row.headers?.[TEST_MESSAGE_HEADER] !== undefined;

/** What a message says besides its envelope: the parts the marketing layer adds to. */
export interface MessageBody {
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
}

/**
 * The marketing mail layer (`mail/marketing.ts`) over stored messages with their rendered bodies:
 * on the `marketing` and `automation` streams, tracked links and the open pixel (as the row asks),
 * then the compliance footer with the project's postal address and the contact's unsubscribe link,
 * then the RFC 8058 headers (signed by DKIM); other messages keep their body. One answer per
 * message, in order. A batch without such
 * a message costs nothing: no query, no token. A message that cannot carry the layer (no contact
 * to unsubscribe, unless a campaign test) is refused with the reason: failed, never sent bare.
 */
export async function withMarketingLayer(
  ctx: DomainContext,
  messages: { row: EmailRow; body: MessageBody }[],
): Promise<(MessageBody | { refused: string })[]> {
  // `{{ preferences_url }}` means nothing outside the layer: removed (filled below within it)
  const out: (MessageBody | { refused: string })[] = messages.map(({ body, row }) =>
    LAYERED_STREAMS.includes(row.stream) ? body : withoutStandIn(body),
  );
  const layered = [...messages.entries()].filter(([, { row }]) => LAYERED_STREAMS.includes(row.stream));
  if (layered.length === 0) return out;
  const projects = await ctx.db
    .selectFrom('projects')
    .select(['id', 'footer_address'])
    .where('id', 'in', [...new Set(layered.map(([, { row }]) => row.project_id))])
    .execute();
  const addressOf = new Map(projects.map((p) => [p.id, p.footer_address ?? PLACEHOLDER_ADDRESS]));
  for (const [i, { row, body }] of layered) {
    if (row.contact_id === null && !isTestMessage(row)) {
      out[i] = { refused: `a ${row.stream} message needs a contact for its unsubscribe link` };
      continue;
    }
    const urls = publicUrls(ctx, { emailId: row.id, contactId: row.contact_id });
    const unsubscribeUrl = urls.unsubscribe ?? testUnsubscribeUrl(ctx);
    let html = body.html;
    // the text part shows links as written, in every stream: a message without one gets it derived
    // from its HTML before the links are tracked (a template's is rendered the same way)
    const text = body.text ?? (html === null ? null : htmlToText(html));
    if (html !== null && (row.track_clicks || row.track_opens)) {
      html = trackLinks(html, {
        clickUrl: (url, index) => (row.track_clicks ? clickUrlOr(url, () => urls.click(index, url)) : url),
        openPixelUrl: row.track_opens ? urls.open : undefined,
      }).html;
    }
    // `{{ preferences_url }}` becomes the reader's preference page (the unsubscribe link's), after
    // tracking: its stand-in is never tracked, so the link leads straight to the page
    const filled = fillPreferencesUrl({ html, text }, unsubscribeUrl);
    const parts = addFooter(filled, {
      postalAddress: addressOf.get(row.project_id) ?? PLACEHOLDER_ADDRESS,
      unsubscribeUrl,
    });
    out[i] = {
      html: parts.html,
      text: parts.text,
      headers: { ...body.headers, ...listUnsubscribeHeaders(unsubscribeUrl) },
    };
  }
  return out;
}

/** A message outside the layer keeps its body, without the stand-in of `{{ preferences_url }}`. */
function withoutStandIn(body: MessageBody): MessageBody {
  if (!body.html?.includes(PREFERENCES_URL_STANDIN) && !body.text?.includes(PREFERENCES_URL_STANDIN))
    return body;
  return { ...body, ...fillPreferencesUrl(body, '') };
}

/** A link the click token cannot carry (too long, not a parseable URL) is left as written. */
function clickUrlOr(url: string, tracked: () => string): string {
  try {
    return tracked();
  } catch {
    return url;
  }
}

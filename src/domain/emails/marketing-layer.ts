import { htmlToText } from '../../mail/html-to-text.ts';
import { addFooter, listUnsubscribeHeaders, trackLinks } from '../../mail/marketing.ts';
import type { DomainContext } from '../core/context.ts';
import { publicUrls } from '../marketing/tokens.ts';
import { PLACEHOLDER_ADDRESS } from '../plans/project-facts.ts';
import type { EmailRow } from './delivery-outcomes.ts';

const LAYERED_STREAMS: EmailRow['stream'][] = ['marketing', 'automation'];

/**
 * Marks a campaign's test message (POST /campaigns/{id}/test), on the message itself too. A test to
 * a member who is no contact of the project has no contact to unsubscribe: its link goes to
 * {public_url}/u/test, a page saying it was a test, instead of the message being refused. Only
 * the campaign test send writes it (x-posthorn- headers cannot be given by a sender).
 */
export const TEST_MESSAGE_HEADER = 'X-Posthorn-Test';

/** The unsubscribe link of a test message without a contact: a page that says it was a test. */
export function testUnsubscribeUrl(ctx: DomainContext): string {
  return `${ctx.config.publicUrl.replace(/\/+$/, '')}/u/test`;
}

const isTestMessage = (row: EmailRow) => row.headers?.[TEST_MESSAGE_HEADER] !== undefined;

/**
 * Applies the marketing mail layer (`mail/marketing.ts`) to the claimed rows of the `marketing` and
 * `automation` streams, in place, after their content is rendered and before they are composed:
 * tracked links and the open pixel (as the row asks), then the compliance footer with the
 * project's postal address and the contact's unsubscribe link, then the RFC 8058 headers (signed by
 * DKIM). A batch without such a row costs nothing: no query, no token. Returns the rows that cannot
 * carry the layer (no contact to unsubscribe, unless a campaign test), with the reason: they are
 * failed, never sent bare.
 */
export async function applyMarketingLayer(
  ctx: DomainContext,
  rows: EmailRow[],
): Promise<Map<string, string>> {
  const refused = new Map<string, string>();
  const layered = rows.filter((r) => LAYERED_STREAMS.includes(r.stream));
  if (layered.length === 0) return refused;
  const projects = await ctx.db
    .selectFrom('projects')
    .select(['id', 'footer_address'])
    .where('id', 'in', [...new Set(layered.map((r) => r.project_id))])
    .execute();
  const addressOf = new Map(projects.map((p) => [p.id, p.footer_address ?? PLACEHOLDER_ADDRESS]));
  for (const row of layered) {
    if (row.contact_id === null && !isTestMessage(row)) {
      refused.set(row.id, `a ${row.stream} message needs a contact for its unsubscribe link`);
      continue;
    }
    const urls = publicUrls(ctx, { emailId: row.id, contactId: row.contact_id });
    let html = row.html;
    // the text part shows links as written, in every stream: a message without one gets it derived
    // from its HTML before the links are tracked (a template's is rendered the same way)
    const text = row.text_body ?? (html === null ? null : htmlToText(html));
    if (html !== null && (row.track_clicks || row.track_opens)) {
      html = trackLinks(html, {
        clickUrl: (url, index) => (row.track_clicks ? clickUrlOr(url, () => urls.click(index, url)) : url),
        openPixelUrl: row.track_opens ? urls.open : undefined,
      }).html;
    }
    const unsubscribeUrl = urls.unsubscribe ?? testUnsubscribeUrl(ctx);
    const parts = addFooter(
      { html, text },
      { postalAddress: addressOf.get(row.project_id) ?? PLACEHOLDER_ADDRESS, unsubscribeUrl },
    );
    row.html = parts.html;
    row.text_body = parts.text;
    row.headers = { ...row.headers, ...listUnsubscribeHeaders(unsubscribeUrl) };
  }
  return refused;
}

/** A link the click token cannot carry (too long, not a parseable URL) is left as written. */
function clickUrlOr(url: string, tracked: () => string): string {
  try {
    return tracked();
  } catch {
    return url;
  }
}

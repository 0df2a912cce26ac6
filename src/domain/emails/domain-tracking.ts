import { trackLinks } from '../../mail/marketing.ts';
import type { DomainContext } from '../core/context.ts';
import { publicUrls } from '../marketing/tokens.ts';
import type { EmailRow } from '../sending/delivery-outcomes.ts';
import type { MessageBody } from './marketing-layer.ts';

/**
 * Open and click tracking of transactional mail (issue 51): a message sent from a domain with
 * `open_tracking` or `click_tracking` on (PATCH /v1/domains/{id}, Resend's `domains.update`) was
 * accepted with `track_opens`/`track_clicks` set, and leaves with the open pixel and tracked links,
 * and without the marketing layer's footer. Campaigns and flows are tracked by the marketing
 * layer, as their own `tracking` says; this leaves them alone.
 */
export function withDomainTracking(ctx: DomainContext, row: EmailRow, body: MessageBody): MessageBody {
  if (row.stream === 'marketing' || row.stream === 'automation') return body;
  if (body.html === null || !(row.track_opens || row.track_clicks)) return body;
  const urls = publicUrls(ctx, { emailId: row.id, contactId: null });
  const html = trackLinks(body.html, {
    clickUrl: (url, index) => {
      if (!row.track_clicks) return url;
      try {
        return urls.click(index, url);
      } catch {
        // a link the click token cannot carry (too long, not a parseable URL) is left as written
        return url;
      }
    },
    openPixelUrl: row.track_opens ? urls.open : undefined,
  }).html;
  return { ...body, html };
}

import type { ComposeInput } from '../../mail/compose.ts';
import type { DomainContext } from '../core/context.ts';
import { withDomainTracking } from '../emails/domain-tracking.ts';
import { type MessageBody, withMarketingLayer } from '../emails/marketing-layer.ts';
import type { JobLane } from '../templates/fair-pool.ts';
import { renderStored } from '../templates/send.ts';
import type { EmailRow } from './delivery-outcomes.ts';
import { SYSTEM_PROJECT } from './system-mail.ts';

/** A stored attachment's bytes, by message and position. */
export interface StoredAttachment {
  email_id: string;
  position: number;
  content: Buffer;
}

/** What goes on the wire for one stored message, or why it cannot go: its template no longer renders, or it cannot carry the marketing layer. */
export type Outgoing = { input: ComposeInput } | { refused: 'render' | 'layer'; reason: string };

/**
 * The outgoing messages of stored rows, the one way delivery and GET /emails/{id}/raw make them: a
 * template email rendered again from its version and data (in the template pool), the marketing
 * layer on marketing and automation mail, then the composer's input with the attachments' bytes.
 * One answer per row, in order; the rows are left as they were. Delivery renders in the pool's
 * `background` lane, behind the project's other template work.
 */
export async function outgoingMessages(
  ctx: DomainContext,
  rows: EmailRow[],
  attachments: StoredAttachment[],
  lane: JobLane = 'foreground',
): Promise<Outgoing[]> {
  const out: Outgoing[] = [];
  // template emails keep their version and data, not 20 KB of HTML each: rendered again here
  const rendered = await renderStored(ctx, rows, lane);
  const bodies: { at: number; row: EmailRow; body: MessageBody }[] = [];
  for (const [at, row] of rows.entries()) {
    const r = rendered.get(row.id);
    if (r && 'error' in r) out[at] = { refused: 'render', reason: r.error };
    else
      bodies.push({
        at,
        row,
        body: { html: r ? r.html : row.html, text: r ? r.text : row.text_body, headers: row.headers },
      });
  }
  const layered = await withMarketingLayer(ctx, bodies);
  for (const [i, { at, row }] of bodies.entries()) {
    const body = layered[i];
    out[at] =
      'refused' in body
        ? { refused: 'layer', reason: body.refused }
        : { input: composeInputOf(row, withDomainTracking(ctx, row, body), attachments) };
  }
  return out;
}

/**
 * What the composer is given for a stored message: its fields with the body as it leaves, its
 * attachments' bytes by position and the internal tags of Feedback-ID
 * (`marketing:{campaign}:{project}:posthorn`).
 */
function composeInputOf(row: EmailRow, body: MessageBody, attachments: StoredAttachment[]): ComposeInput {
  const mine = attachments.filter((a) => a.email_id === row.id);
  return {
    messageId: row.message_id,
    from: row.from_header,
    to: row.to_addresses,
    cc: row.cc_addresses,
    replyTo: row.reply_to,
    subject: row.subject,
    html: body.html,
    text: body.text,
    headers: body.headers,
    attachments: row.attachments.map((a, i) => ({
      filename: a.filename,
      contentType: a.content_type,
      contentId: a.content_id,
      content: mine.find((x) => x.position === i)?.content ?? Buffer.alloc(0),
    })),
    // the service's own mail names no customer's project
    projectId: row.stream === 'system' ? SYSTEM_PROJECT : row.project_id,
    stream: row.stream,
    feedbackTags: row.campaign_id ? [row.campaign_id] : row.flow_id ? [row.flow_id] : undefined,
  };
}

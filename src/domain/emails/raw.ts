import { type ComposeInput, composeMessage } from '../../mail/compose.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import { renderStored } from '../templates/send.ts';
import type { EmailRow } from './delivery-outcomes.ts';
import { applyMarketingLayer } from './marketing-layer.ts';

/**
 * What the composer is given for a stored message: its fields, its attachments' bytes by position
 * and the internal tags of Feedback-ID (`marketing:{campaign}:{project}:posthorn`).
 */
export function composeInputOf(
  row: EmailRow,
  attachments: { position: number; content: Buffer }[],
): ComposeInput {
  return {
    messageId: row.message_id,
    from: row.from_header,
    to: row.to_addresses,
    cc: row.cc_addresses,
    replyTo: row.reply_to,
    subject: row.subject,
    html: row.html,
    text: row.text_body,
    headers: row.headers,
    attachments: row.attachments.map((a, i) => ({
      filename: a.filename,
      contentType: a.content_type,
      contentId: a.content_id,
      content: attachments.find((x) => x.position === i)?.content ?? Buffer.alloc(0),
    })),
    projectId: row.project_id,
    stream: row.stream,
    feedbackTags: row.campaign_id ? [row.campaign_id] : row.flow_id ? [row.flow_id] : undefined,
  };
}

/**
 * GET /emails/{id}/raw: the message's MIME source as delivery would compose it now, through the
 * same steps: a template email rendered again from its version and data, the marketing layer
 * (tracked links, footer, List-Unsubscribe) on marketing and automation mail, then the one
 * composer. Only the DKIM-Signature header is missing: it is added as the message leaves, and a
 * signature made for a page would prove nothing. The Date header is the time of the request; line
 * ends are CRLF, as the signer writes them.
 * A message that cannot be composed (its body removed by retention, its template no longer
 * renders, a marketing message without a contact) is a 409 with the reason.
 */
export async function rawEmailSource(ctx: DomainContext, projectId: string, id: string): Promise<Buffer> {
  const row: EmailRow = await findInProject(ctx.db, 'emails', 'Email', projectId, id);
  if (row.body_pruned_at)
    throw new ConflictError(
      `This email's body was removed on ${row.body_pruned_at.toISOString()} (retention, POSTHORN_RETENTION_MESSAGE_BODIES_DAYS): its source can no longer be composed`,
    );
  const rendered = (await renderStored(ctx, [row])).get(row.id);
  if (rendered && 'error' in rendered)
    throw new ConflictError(`This email's template no longer renders: ${rendered.error}`);
  if (rendered) Object.assign(row, { html: rendered.html, text_body: rendered.text });
  const refused = (await applyMarketingLayer(ctx, [row])).get(row.id);
  if (refused) throw new ConflictError(`This email cannot be composed: ${refused}`);
  const attachments =
    row.attachments.length === 0
      ? []
      : await ctx.db
          .selectFrom('email_attachments')
          .select(['position', 'content'])
          .where('email_id', '=', row.id)
          .execute();
  const raw = await composeMessage(composeInputOf(row, attachments), null);
  // line ends as the signer writes them (bare LFs become CRLF, as on the wire), byte-preserving
  return Buffer.from(raw.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
}

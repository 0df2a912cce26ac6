import { composeMessage } from '../../mail/compose.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';
import type { EmailRow } from '../sending/delivery-outcomes.ts';
import { outgoingMessages } from '../sending/outgoing.ts';

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
  const attachments =
    row.attachments.length === 0
      ? []
      : await ctx.db
          .selectFrom('email_attachments')
          .select(['email_id', 'position', 'content'])
          .where('email_id', '=', row.id)
          .execute();
  const [outgoing] = await outgoingMessages(ctx, [row], attachments);
  if ('refused' in outgoing)
    throw new ConflictError(
      outgoing.refused === 'render'
        ? `This email's template no longer renders: ${outgoing.reason}`
        : `This email cannot be composed: ${outgoing.reason}`,
    );
  const raw = await composeMessage(outgoing.input, null);
  // line ends as the signer writes them (bare LFs become CRLF, as on the wire), byte-preserving
  return Buffer.from(raw.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
}

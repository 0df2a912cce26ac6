import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError } from '../core/errors.ts';
import { findInProject } from '../core/find.ts';

/**
 * The attachments of a sent message (as accepted, by position): their metadata is the message's
 * `attachments`, their bytes are email_attachments' until retention removes the message's body
 * (POSTHORN_RETENTION_MESSAGE_BODIES_DAYS), after which reading one is a 409 with the date.
 */

/** A message's attachments' metadata, each with its position (0 for the first). */
export async function sentAttachments(ctx: Pick<DomainContext, 'db'>, projectId: string, emailId: string) {
  const row = await findInProject(ctx.db, 'emails', 'Email', projectId, emailId, [
    'id',
    'attachments',
    'body_pruned_at',
  ]);
  return { ...row, attachments: row.attachments.map((a, position) => ({ position, ...a })) };
}

/** One attachment's metadata and bytes. */
export async function sentAttachment(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  emailId: string,
  position: number,
) {
  const email = await sentAttachments(ctx, projectId, emailId);
  const meta = email.attachments[position];
  if (!meta) throw new NotFoundError('Attachment');
  const stored = await ctx.db
    .selectFrom('email_attachments')
    .select('content')
    .where('email_id', '=', email.id)
    .where('position', '=', position)
    .executeTakeFirst();
  if (!stored)
    throw new ConflictError(
      `This attachment was removed${email.body_pruned_at ? ` on ${email.body_pruned_at.toISOString()}` : ''} with the message's body (retention, POSTHORN_RETENTION_MESSAGE_BODIES_DAYS)`,
    );
  return { meta, content: stored.content };
}

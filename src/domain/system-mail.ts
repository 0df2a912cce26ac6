import { randomUUID } from 'node:crypto';
import type { Tx } from '../db/database.ts';
import { enqueue } from '../jobs/enqueue.ts';
import { composeMessage } from '../mail/compose.ts';
import type { DomainContext } from './context.ts';

export interface SystemEmail {
  to: string;
  subject: string;
  text: string;
}

/** What `X-Posthorn-Project` and `Feedback-ID` name for the service's own mail, which has no project. */
export const SYSTEM_PROJECT = 'system';

/**
 * Queues one of the service's own messages (codes, notices) inside the caller's transaction:
 * the outbox row and its delivery job commit together, so an accepted signup always gets its code.
 * The message is composed here like every other (stream `system`) and signed when it leaves.
 */
export async function queueSystemEmail(tx: Tx, ctx: DomainContext, email: SystemEmail): Promise<string> {
  const id = randomUUID();
  const messageId = `<${id}@${ctx.config.sharedDomain}>`;
  const raw = await composeMessage(
    {
      messageId,
      from: ctx.config.systemFrom,
      to: [email.to],
      cc: [],
      replyTo: [],
      subject: email.subject,
      html: null,
      text: email.text,
      headers: {},
      attachments: [],
      projectId: SYSTEM_PROJECT,
      stream: 'system',
    },
    null,
  );
  await tx
    .insertInto('system_emails')
    .values({ id, message_id: messageId, to_address: email.to, subject: email.subject, raw })
    .execute();
  await enqueue(tx, [{ task: 'send_system_email', payload: { id } }]);
  return id;
}

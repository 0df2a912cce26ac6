import { randomUUID } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Tx } from '../db/database.ts';
import { enqueue } from '../jobs/enqueue.ts';
import type { DomainContext } from './context.ts';

export interface SystemEmail {
  to: string;
  subject: string;
  text: string;
}

/** Builds the exact bytes of a message with nodemailer's composer. */
export function composeMessage(fields: {
  from: string;
  to: string;
  subject: string;
  text: string;
  messageId: string;
  headers?: Record<string, string>;
}): Promise<Buffer> {
  const mail = new MailComposer({
    from: fields.from,
    to: fields.to,
    subject: fields.subject,
    text: fields.text,
    messageId: fields.messageId,
    headers: fields.headers,
  });
  return mail.compile().build();
}

/**
 * Queues one of the service's own messages (codes, notices) inside the caller's transaction:
 * the outbox row and its delivery job commit together, so an accepted signup always gets its code.
 */
export async function queueSystemEmail(tx: Tx, ctx: DomainContext, email: SystemEmail): Promise<string> {
  const id = randomUUID();
  const domain = ctx.config.sharedDomain;
  const messageId = `<${id}@${domain}>`;
  const raw = await composeMessage({ from: ctx.config.systemFrom, messageId, ...email });
  await tx
    .insertInto('system_emails')
    .values({ id, message_id: messageId, to_address: email.to, subject: email.subject, raw })
    .execute();
  await enqueue(tx, [{ task: 'send_system_email', payload: { id }, maxAttempts: 20 }]);
  return id;
}

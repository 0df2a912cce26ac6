import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { SYSTEM_PRIORITY } from '../../db/enqueue.ts';
import { addressOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { messageIdOf } from '../emails/email-row.ts';
import { applyWrite, type EmailRowInput } from '../emails/write.ts';

export interface SystemEmail {
  to: string;
  subject: string;
  text: string;
}

/** What `X-Posthorn-Project` and `Feedback-ID` name for the service's own mail, which has no project of a customer's. */
export const SYSTEM_PROJECT = 'system';

/**
 * The project the service's own mail is kept in (migration 0044): its rows, events and outcomes are
 * those of every message; no API key, member or listing reaches it.
 */
export const SYSTEM_PROJECT_ID = '00000000-0000-4000-8000-000000000003';

/**
 * Queues one of the service's own messages (codes, notices) inside the caller's transaction: an
 * emails row of the stream `system`, its `queued` event and its delivery job commit together, so
 * an accepted signup always gets its code. It leaves like every message (claimed, composed and
 * signed by the shared domain as it leaves, recorded as it is answered), first in every queue; its
 * body, which may hold a code, is cleared once it is settled (delivery-outcomes.ts).
 */
export async function queueSystemEmail(
  tx: Tx,
  ctx: Pick<DomainContext, 'config'>,
  email: SystemEmail,
  id: string = randomUUID(),
): Promise<string> {
  // the shared domain's own address names the message: the service's mail is from it
  const messageId = messageIdOf(id, `no-reply@${ctx.config.sharedDomain}`);
  await applyWrite(tx, {
    emails: [systemRow(ctx, id, messageId, email)],
    attachments: [],
    events: [{ email_id: id, project_id: SYSTEM_PROJECT_ID, type: 'queued', recipient: null, detail: {} }],
    // the service's own mail is nobody's usage
    usage: [],
    jobs: [],
    immediate: [id],
    priority: SYSTEM_PRIORITY,
  });
  return id;
}

function systemRow(
  ctx: Pick<DomainContext, 'config'>,
  id: string,
  messageId: string,
  email: SystemEmail,
): EmailRowInput {
  return {
    id,
    project_id: SYSTEM_PROJECT_ID,
    api_key_id: null,
    stream: 'system',
    status: 'queued',
    message_id: messageId,
    from_header: ctx.config.systemFrom,
    from_address: addressOf(ctx.config.systemFrom),
    to_addresses: [email.to],
    cc_addresses: [],
    bcc_addresses: [],
    reply_to: [],
    subject: email.subject,
    html: null,
    text_body: email.text,
    headers: {},
    tags: [],
    attachments: [],
    scheduled_at: null,
    size_bytes: 0,
    template_id: null,
    template_version: null,
    template_data: null,
    contact_id: null,
    campaign_id: null,
    track_opens: false,
    track_clicks: false,
    recipients: [addressOf(email.to).toLowerCase()],
  };
}

/**
 * Moves what still waited in the outbox of earlier versions (`system_emails`, queued or deferred)
 * into `emails`, same id and Message-ID, and drops its old jobs: run when a worker starts, so mail
 * accepted before an upgrade still leaves. Nothing to do (one query) once it has run.
 */
export async function adoptWaitingSystemMail(ctx: Pick<DomainContext, 'db' | 'config'>): Promise<number> {
  const waiting = await ctx.db
    .selectFrom('system_emails')
    .select(['id', 'to_address', 'subject', 'raw'])
    .where('status', 'in', ['queued', 'deferred'])
    .where('raw', 'is not', null)
    .execute();
  if (waiting.length > 0) {
    // loaded only when there is such mail: a worker does not otherwise carry the MIME parser
    const { simpleParser } = await import('mailparser');
    await ctx.db.transaction().execute(async (tx) => {
      for (const row of waiting) {
        const parsed = await simpleParser(row.raw as Buffer);
        await queueSystemEmail(
          tx,
          ctx,
          { to: row.to_address, subject: row.subject, text: parsed.text ?? '' },
          row.id,
        );
      }
      await tx
        .deleteFrom('system_emails')
        .where(
          'id',
          'in',
          waiting.map((r) => r.id),
        )
        .execute();
    });
  }
  await sql`delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
             where t.id = j.task_id and t.identifier = 'send_system_email'`.execute(ctx.db);
  return waiting.length;
}

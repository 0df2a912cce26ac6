import { randomUUID } from 'node:crypto';
import type { Tx } from '../../db/database.ts';
import { enqueue } from '../../db/enqueue.ts';
import type { SystemEmailStatus } from '../../db/schema.ts';
import { type DeliveryResult, deliveryErrorOf, isPermanent } from '../../delivery/transport.ts';
import { addressOf, domainOf } from '../../mail/address.ts';
import { composeMessage } from '../../mail/compose.ts';
import { signDkim } from '../../mail/dkim.ts';
import type { DomainContext } from '../core/context.ts';
import { sharedDomainKey } from '../sending-domains/dkim-keys.ts';
import { messageIdOf } from './email-row.ts';
import { type DeliveryDeps, handOver, nextAttemptAt } from './hand-over.ts';

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
export async function queueSystemEmail(
  tx: Tx,
  ctx: Pick<DomainContext, 'config' | 'db'>,
  email: SystemEmail,
): Promise<string> {
  const id = randomUUID();
  // the shared domain's own address: the service's mail is from it
  const messageId = messageIdOf(id, `no-reply@${ctx.config.sharedDomain}`);
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

const SENDABLE: SystemEmailStatus[] = ['queued', 'deferred'];

/** The next hop's answer: accepted, refused for good (5xx), or to be tried again. */
type Attempt = { status: 'sent' | 'bounced' | 'deferred'; response: string; providerMessageId?: string };

/**
 * Delivers one of the service's own messages the way every message leaves: signed with the shared
 * domain's key and handed over with a VERP return path (so a bounce comes back to the MX and is
 * recorded on the row); a temporary failure is tried again on POSTHORN_RETRY_SCHEDULE until
 * POSTHORN_RETRY_FOR_HOURS, then `failed`. The row is taken with a lock, so a duplicate job is
 * harmless. The body is cleared once sent (it may hold a code).
 */
export async function deliverSystemEmail(deps: DeliveryDeps, id: string): Promise<void> {
  const { ctx } = deps;
  // read before the row is locked, so a job never holds two connections at once
  const key = await sharedDomainKey(ctx);
  await ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('system_emails')
      .selectAll()
      .where('id', '=', id)
      .where('status', 'in', SENDABLE)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst();
    if (!row?.raw) return;
    const attempts = row.attempts + 1;
    // the service's own mail is routed as transactional mail of no project, from the shared domain
    const routes = deps.routes.choose({
      stream: 'transactional',
      projectId: null,
      fromDomain: key.domain,
      recipientDomain: domainOf(addressOf(row.to_address)).toLowerCase(),
    });
    const result = await outcomeOf(
      handOver(deps, routes, {
        id: row.id,
        key,
        to: [row.to_address],
        raw: signDkim(row.raw, key),
        messageId: row.message_id,
        attempt: attempts,
        tags: { email: row.id, project: null, stream: 'transactional' },
      }),
    );
    const update = tx.updateTable('system_emails').where('id', '=', id);
    if (result.status === 'sent') {
      await update
        .set({
          status: 'sent',
          attempts,
          sent_at: new Date(),
          next_attempt_at: null,
          raw: null,
          provider_message_id: result.providerMessageId ?? null,
        })
        .execute();
      return;
    }
    const retryAt = result.status === 'deferred' ? nextAttemptAt(ctx.config, attempts, row.created_at) : null;
    if (!retryAt) {
      await update
        .set({
          status: result.status === 'bounced' ? 'bounced' : 'failed',
          attempts,
          last_error: result.response,
          next_attempt_at: null,
          raw: null,
        })
        .execute();
      return;
    }
    await update
      .set({ status: 'deferred', attempts, last_error: result.response, next_attempt_at: retryAt })
      .execute();
    await enqueue(tx, [
      { task: 'send_system_email', payload: { id }, runAt: retryAt, jobKey: `system_email:${id}` },
    ]);
  });
}

/** What the next hop said, classified as project mail is: 5xx is final, anything else temporary. */
async function outcomeOf(sending: Promise<DeliveryResult>): Promise<Attempt> {
  try {
    const result = await sending;
    if (result.recipients.some((r) => r.accepted))
      return { status: 'sent', response: result.response, providerMessageId: result.providerMessageId };
    const refusal = result.recipients.find((r) => !r.accepted);
    return {
      status: isPermanent(refusal?.responseCode) ? 'bounced' : 'deferred',
      response: refusal?.response ?? result.response,
    };
  } catch (err) {
    const e = deliveryErrorOf(err);
    return { status: e.permanent ? 'bounced' : 'deferred', response: e.response };
  }
}

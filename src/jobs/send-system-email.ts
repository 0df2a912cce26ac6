import type { Task } from 'graphile-worker';
import type { SystemEmailStatus } from '../db/schema.ts';
import { DeliveryError, type DeliveryResult, type Transport } from '../delivery/transport.ts';
import type { DomainContext } from '../domain/context.ts';
import { sharedDomainKey } from '../domain/dkim-keys.ts';
import { signDkim } from '../mail/dkim.ts';
import { handOver, nextAttemptAt } from './deliver-email.ts';
import { enqueue } from './enqueue.ts';

const SENDABLE: SystemEmailStatus[] = ['queued', 'deferred'];

/** The next hop's answer: accepted, refused for good (5xx), or to be tried again. */
type Attempt = { status: 'sent' | 'bounced' | 'deferred'; response: string };

/**
 * Delivers one of the service's own messages the way every message leaves: signed with the shared
 * domain's key and handed over with a VERP return path (so a bounce comes back to the MX and is
 * recorded on the row); a temporary failure is tried again on POSTHORN_RETRY_SCHEDULE until
 * POSTHORN_RETRY_FOR_HOURS, then `failed`. The payload is the outbox row id; the row is taken with
 * a lock, so a duplicate job is harmless. The body is cleared once sent (it may hold a code).
 */
export function sendSystemEmailTask(deps: { ctx: DomainContext; transport: Transport }): Task {
  const { ctx } = deps;
  return async (payload) => {
    const { id } = payload as { id: string };
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
      const result = await outcomeOf(
        handOver(deps, {
          id: row.id,
          key,
          to: [row.to_address],
          raw: signDkim(row.raw, key),
          messageId: row.message_id,
        }),
      );
      const update = tx.updateTable('system_emails').where('id', '=', id);
      if (result.status === 'sent') {
        await update
          .set({ status: 'sent', attempts, sent_at: new Date(), next_attempt_at: null, raw: null })
          .execute();
        return;
      }
      const retryAt =
        result.status === 'deferred' ? nextAttemptAt(ctx.config, attempts, row.created_at) : null;
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
  };
}

/** What the next hop said, classified as deliver-email does: 5xx is final, anything else temporary. */
async function outcomeOf(sending: Promise<DeliveryResult>): Promise<Attempt> {
  try {
    const result = await sending;
    if (result.accepted.length > 0) return { status: 'sent', response: result.response };
    const refusal = result.rejectedErrors?.[0];
    return {
      status: (refusal?.responseCode ?? 0) >= 500 ? 'bounced' : 'deferred',
      response: refusal?.response ?? result.response,
    };
  } catch (err) {
    const e =
      err instanceof DeliveryError ? err : new DeliveryError((err as Error).message, { permanent: false });
    return { status: e.permanent ? 'bounced' : 'deferred', response: e.response };
  }
}

import type { Task } from 'graphile-worker';
import type { Db } from '../db/database.ts';
import { DeliveryError, type Transport } from '../delivery/transport.ts';
import { addressOf } from '../mail/address.ts';

/**
 * Delivers one of the service's own messages. The payload is the outbox row id; the row is taken
 * with a lock, so a duplicate job is harmless. The body is cleared once sent (it may hold a code).
 */
export function sendSystemEmailTask(deps: { db: Db; transport: Transport; systemFrom: string }): Task {
  return async (payload) => {
    const { id } = payload as { id: string };
    await deps.db.transaction().execute(async (tx) => {
      const row = await tx
        .selectFrom('system_emails')
        .selectAll()
        .where('id', '=', id)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (row?.status !== 'queued' || !row.raw) return;
      try {
        await deps.transport.send({
          from: addressOf(deps.systemFrom),
          to: [row.to_address],
          raw: row.raw,
          messageId: row.message_id,
        });
      } catch (err) {
        if (err instanceof DeliveryError && err.permanent) {
          await tx
            .updateTable('system_emails')
            .set({ status: 'failed', last_error: err.response, raw: null })
            .where('id', '=', id)
            .execute();
          return;
        }
        throw err; // temporary: graphile-worker retries with backoff
      }
      await tx
        .updateTable('system_emails')
        .set({ status: 'sent', sent_at: new Date(), raw: null })
        .where('id', '=', id)
        .execute();
    });
  };
}

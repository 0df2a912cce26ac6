import type { Db } from '../db/database.ts';
import type { DeliveryResult, OutboundMessage, Transport } from './transport.ts';

function subjectOf(raw: Buffer): string | null {
  const head = raw.subarray(0, Math.min(raw.length, 16_384)).toString('utf8');
  const match = /^Subject:[ \t]*(.*(?:\r?\n[ \t].*)*)/im.exec(head.split(/\r?\n\r?\n/)[0]);
  return match ? match[1].replace(/\r?\n[ \t]/g, ' ') : null;
}

/**
 * The development transport used when no relay is configured: the exact bytes that would have
 * left are stored in the database, and a one-line notice is logged. `posthorn mailbox` and the dashboard's Mailbox read them (src/domain/mailbox).
 */
export function createMailboxTransport(db: Db, log: (line: string) => void): Transport {
  return {
    name: 'mailbox',
    async send(message: OutboundMessage): Promise<DeliveryResult> {
      message.onSession?.();
      const row = await db
        .insertInto('mailbox_messages')
        .values({
          message_id: message.messageId,
          envelope_from: message.from,
          envelope_to: message.to,
          subject: subjectOf(message.raw),
          raw: message.raw,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      log(`mailbox: captured ${message.messageId} to ${message.to.join(', ')} (posthorn mailbox ${row.id})`);
      const response = `250 captured in the dev mailbox as ${row.id}`;
      // nothing goes further than the mailbox: its acceptance is final
      return {
        response,
        recipients: message.to.map((recipient) => ({ recipient, accepted: true, final: true, response })),
      };
    },
    async close() {},
  };
}

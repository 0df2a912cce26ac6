import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { MailboxMessagesTable } from '../../db/schema.ts';
import { addressList, decodeEncodedWords, headerPairs, parseMail } from '../../mail/parsed.ts';
import { NotFoundError } from '../core/errors.ts';
import { isUuid } from '../core/ids.ts';
import { type Page, readPage } from '../core/pages.ts';

/**
 * The dev mailbox's messages (captured by delivery/mailbox.ts when no relay is configured), read
 * for people: newest first, and one message decoded from its MIME source (quoted-printable and
 * base64 parts, encoded words, the text and HTML parts, the attachments' names and sizes).
 */

type Row = Omit<Selectable<MailboxMessagesTable>, 'raw'> & { size_bytes: number };

const SUMMARY_COLUMNS = [
  'id',
  'message_id',
  'envelope_from',
  'envelope_to',
  'subject',
  'created_at',
] as const;

function presentSummary(row: Row) {
  return {
    id: row.id,
    object: 'mailbox_message' as const,
    message_id: row.message_id,
    envelope: { from: row.envelope_from, to: row.envelope_to },
    subject: row.subject === null ? null : decodeEncodedWords(row.subject),
    size_bytes: Number(row.size_bytes),
    created_at: row.created_at.toISOString(),
  };
}

/** `%` and `_` match themselves in a LIKE pattern. */
const literal = (text: string) => text.replace(/[\\%_]/g, '\\$&');

/** The captured messages, newest first; `to` keeps those with an envelope recipient containing it (any case). */
export async function listMailboxMessages(db: Db, query: Page & { to?: string }) {
  let base = db.selectFrom('mailbox_messages');
  const to = query.to?.trim();
  if (to) {
    const pattern = `%${literal(to)}%`;
    base = base.where(
      sql<boolean>`exists (select 1 from unnest(envelope_to) as recipient(address) where recipient.address ilike ${pattern})`,
    );
  }
  const page = await readPage(
    base,
    (b) =>
      b
        .select(SUMMARY_COLUMNS)
        .select(sql<number>`octet_length(raw)`.as('size_bytes'))
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc'),
    query,
  );
  return { data: page.rows.map(presentSummary), total: page.total, limit: page.limit, offset: page.offset };
}

async function findMessage(db: Db, id: string) {
  const row = isUuid(id)
    ? await db
        .selectFrom('mailbox_messages')
        .selectAll()
        .select(sql<number>`octet_length(raw)`.as('size_bytes'))
        .where('id', '=', id)
        .executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('Mailbox message');
  return row;
}

/** One captured message, decoded: addresses, subject, date, every header, text and HTML parts, attachments. */
export async function readMailboxMessage(db: Db, id: string) {
  const row = await findMessage(db, id);
  const parsed = await parseMail(row.raw, {
    skipTextToHtml: true,
    skipTextLinks: true,
    skipImageLinks: true,
  });
  const date = parsed.date && !Number.isNaN(parsed.date.getTime()) ? parsed.date.toISOString() : null;
  return {
    ...presentSummary(row),
    subject: parsed.subject ?? null,
    from: parsed.from?.text ?? null,
    to: addressList(parsed.to),
    cc: addressList(parsed.cc),
    reply_to: addressList(parsed.replyTo),
    date,
    headers: headerPairs(parsed).map(([name, value]) => ({ name, value })),
    text: parsed.text ?? null,
    html: typeof parsed.html === 'string' ? parsed.html : null,
    attachments: parsed.attachments.map((a) => ({
      filename: a.filename ?? null,
      content_type: a.contentType,
      size: a.content.length,
    })),
  };
}

/** A decoded captured message, as `readMailboxMessage` gives it. */
export type MailboxMessage = Awaited<ReturnType<typeof readMailboxMessage>>;

/** One captured message exactly as it would have left, byte for byte. */
export async function mailboxMessageRaw(db: Db, id: string): Promise<Buffer> {
  return (await findMessage(db, id)).raw;
}

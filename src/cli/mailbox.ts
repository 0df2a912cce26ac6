import type { MailboxMessage } from '../domain/mailbox/messages.ts';

/**
 * A captured message as `posthorn mailbox <id>` prints it: the headers a person reads, the text
 * part decoded (quoted-printable soft breaks joined, so a code reads as one word), and where to see
 * the rest (the HTML part in the dashboard, the raw source with --raw).
 */
export function formatMailboxMessage(m: MailboxMessage, dashboardUrl: string): string {
  const rows: [string, string][] = [
    ['From', m.from ?? m.envelope.from],
    ['To', (m.to.length ? m.to : m.envelope.to).join(', ')],
    ...(m.cc.length ? ([['Cc', m.cc.join(', ')]] as [string, string][]) : []),
    ...(m.reply_to.length ? ([['Reply-To', m.reply_to.join(', ')]] as [string, string][]) : []),
    ['Subject', m.subject ?? '(no subject)'],
    ['Date', m.date ?? m.created_at],
    ['Message-ID', m.message_id ?? '—'],
    ...m.attachments.map((a): [string, string] => [
      'Attachment',
      `${a.filename ?? '(no name)'} (${a.content_type}, ${a.size} bytes)`,
    ]),
  ];
  const width = Math.max(...rows.map(([name]) => name.length)) + 2;
  const head = rows.map(([name, value]) => `${`${name}:`.padEnd(width)}${value}`).join('\n');
  const body = m.text?.replace(/\s+$/, '') || '(this message has no text part)';
  const notes = [
    m.html !== null ? `The HTML part is shown in the dashboard's Mailbox: ${dashboardUrl}` : null,
    `The raw MIME source: posthorn mailbox ${m.id} --raw`,
  ].filter((line) => line !== null);
  return `${head}\n\n${body}\n\n---\n${notes.join('\n')}\n`;
}

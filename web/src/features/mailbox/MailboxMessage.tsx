import { useQuery } from '@tanstack/react-query';
import { type RefObject, useId } from 'react';
import { type MailboxMessage, mailboxMessageQuery, mailboxRawQuery } from '../../api/mailbox.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { MessageTabs } from '../../components/MessageTabs.tsx';
import { Facts } from '../../components/Section.tsx';

function Summary({ m }: { m: MailboxMessage }) {
  const rows: [string, string][] = [
    ['From', m.from ?? m.envelope.from],
    ['To', (m.to.length ? m.to : m.envelope.to).join(', ')],
    ...(m.cc.length ? ([['Cc', m.cc.join(', ')]] as [string, string][]) : []),
    ...(m.reply_to.length ? ([['Reply-To', m.reply_to.join(', ')]] as [string, string][]) : []),
    ['Date', formatDateTime(m.date ?? m.created_at)],
    ['Captured', formatDateTime(m.created_at)],
    ['Size', `${formatNumber(m.size_bytes)} bytes`],
    ['Message-ID', m.message_id ?? '—'],
  ];
  if (m.attachments.length > 0)
    rows.push([
      'Attachments',
      m.attachments
        .map((a) => `${a.filename ?? '(no name)'} (${a.content_type}, ${formatNumber(a.size)} bytes)`)
        .join('; '),
    ]);
  return <Facts className="facts break" rows={rows} />;
}

function RawSource({ id }: { id: string }) {
  const raw = useQuery(mailboxRawQuery(id));
  return (
    <>
      <ErrorMessage error={raw.error} />
      {raw.isPending && <p role="status">Loading…</p>}
      {typeof raw.data === 'string' && <pre className="source">{raw.data}</pre>}
    </>
  );
}

/**
 * One captured message: who it was for, then its text part first (codes and links read as
 * plain text), its HTML in a sandboxed frame, its headers and its raw source.
 */
export function MailboxMessageView({
  id,
  heading,
}: {
  id: string;
  heading: RefObject<HTMLHeadingElement | null>;
}) {
  const message = useQuery(mailboxMessageQuery(id));
  const headingId = useId();
  const m = message.data;
  return (
    <section className="card mailbox-message" aria-labelledby={headingId}>
      <h2 id={headingId} tabIndex={-1} ref={heading} className="break">
        {m ? m.subject || '(no subject)' : 'Message'}
      </h2>
      <Loaded query={message} loading="Loading the message…">
        {(m) => (
          <>
            <Summary m={m} />
            <MessageTabs
              key={m.id}
              first="text"
              html={m.html}
              previewTitle="The message's HTML"
              text={m.text ?? 'The message has no text part.'}
              headers={
                <pre className="source">{m.headers.map((h) => `${h.name}: ${h.value}`).join('\n')}</pre>
              }
              raw={<RawSource id={m.id} />}
            />
          </>
        )}
      </Loaded>
    </section>
  );
}

import { useQuery } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { type EmailEvent, type EmailWithEvents, emailQuery } from '../../api/endpoints.ts';
import { rawSourceQuery } from '../../api/overview.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { MessageTabs } from '../../components/MessageTabs.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/emails/$emailId');
const IN_FLIGHT = new Set(['scheduled', 'queued', 'sending', 'deferred']);

function detailText(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => `${k.replaceAll('_', ' ')}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' · ');
}

function Timeline({ events }: { events: EmailEvent[] }) {
  if (events.length === 0) return <p>No events yet.</p>;
  return (
    <ol className="timeline">
      {events.map((event, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: events have no id, and the list only grows at its end
        <li key={i}>
          <div className="timeline-head">
            <StatusBadge status={event.type} />
            <time dateTime={event.created_at}>{formatDateTime(event.created_at)}</time>
          </div>
          {event.recipient && <p className="break">{event.recipient}</p>}
          {Object.keys(event.detail).length > 0 && (
            <p className="muted break small">{detailText(event.detail)}</p>
          )}
        </li>
      ))}
    </ol>
  );
}

function Summary({ email }: { email: EmailWithEvents }) {
  const rows: [string, string][] = [
    ['From', email.from],
    ['To', email.to.join(', ')],
    ...(email.cc.length ? ([['Cc', email.cc.join(', ')]] as [string, string][]) : []),
    ['Stream', email.stream],
    ['Created', formatDateTime(email.created_at)],
    ['Sent', formatDateTime(email.sent_at)],
    ['Attempts', String(email.attempts)],
    ['Size', `${formatNumber(email.size_bytes)} bytes`],
    ['Message-ID', email.message_id],
  ];
  if (email.last_response) rows.push(['Last response', email.last_response]);
  if (email.next_attempt_at && IN_FLIGHT.has(email.status))
    rows.push(['Next attempt', formatDateTime(email.next_attempt_at)]);
  if (email.tags.length) rows.push(['Tags', email.tags.map((t) => `${t.name}:${t.value}`).join(', ')]);
  return <Facts className="facts break" rows={rows} />;
}

// past this, the page shows the start and offers the whole message as a file
const SHOWN_CHARACTERS = 200_000;

/** A link that saves `text` as a file (an object URL, released when the link goes). */
function DownloadLink({ text, filename }: { text: string; filename: string }) {
  const [href, setHref] = useState<string>();
  useEffect(() => {
    const url = URL.createObjectURL(new Blob([text], { type: 'message/rfc822' }));
    setHref(url);
    return () => URL.revokeObjectURL(url);
  }, [text]);
  return href ? (
    <a href={href} download={filename}>
      Download the message (.eml)
    </a>
  ) : null;
}

/**
 * The MIME source (GET /v1/emails/{id}/raw), fetched when its tab is opened: the message as
 * delivery composes it, less the DKIM signature that is added as it leaves.
 */
function RawSource({ emailId }: { emailId: string }) {
  const { project } = useProject();
  const raw = useQuery(rawSourceQuery(project.id, emailId));
  return (
    <>
      <p className="muted small">
        The message as it is handed over, composed now from what is stored: only the DKIM signature, added as
        the message leaves, is missing, and the date is today's.
      </p>
      <ErrorMessage error={raw.error} />
      {raw.isPending && <p role="status">Loading…</p>}
      {typeof raw.data === 'string' && (
        <>
          <p>
            <DownloadLink text={raw.data} filename={`${emailId}.eml`} />
          </p>
          <pre className="source">
            {raw.data.length > SHOWN_CHARACTERS
              ? `${raw.data.slice(0, SHOWN_CHARACTERS)}\n… ${formatNumber(raw.data.length - SHOWN_CHARACTERS)} more characters in the file`
              : raw.data}
          </pre>
        </>
      )}
    </>
  );
}

/** The message's content: what was stored of it, and its source as delivery composes it. */
function Content({ email }: { email: EmailWithEvents }) {
  const headers = Object.entries(email.headers);
  return (
    <MessageTabs
      html={email.html}
      previewTitle="Preview of the email's HTML"
      text={email.text ?? 'No text part was given: the text part sent was derived from the HTML.'}
      headers={
        headers.length === 0 ? (
          <p>No custom headers.</p>
        ) : (
          <pre className="source">{headers.map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>
        )
      }
      raw={<RawSource emailId={email.id} />}
    />
  );
}

/** One message: what it is, what became of it (the event timeline), and what it looks like. */
export default function EmailDetail() {
  const { emailId } = route.useParams();
  const { project } = useProject();
  const email = useQuery({
    ...emailQuery(project.id, emailId),
    // while the message is on its way, its timeline grows: look again every few seconds
    refetchInterval: (query) => (IN_FLIGHT.has(query.state.data?.status ?? '') ? 3000 : false),
  });
  return (
    <>
      <p className="crumbs">
        <Link to="/emails">Back to emails</Link>
      </p>
      <PageHeader title={email.data ? email.data.subject || '(no subject)' : 'Email'}>
        {email.data && <StatusBadge status={email.data.status} />}
      </PageHeader>
      <Loaded query={email}>
        {(data) => (
          <div className="detail">
            <Section title="Message">
              <Summary email={data} />
            </Section>
            <Section title="Timeline">
              <Timeline events={data.events} />
            </Section>
            <Section title="Content" wide>
              <Content email={data} />
            </Section>
          </div>
        )}
      </Loaded>
    </>
  );
}

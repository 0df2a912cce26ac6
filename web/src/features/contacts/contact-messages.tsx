import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { api, projectQuery, type Schemas } from '../../api/client.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { DataTable, Pager } from '../../components/DataTable.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Section } from '../../components/Section.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

/**
 * A contact's page, its messages: every email sent to the address (campaigns, flows and
 * transactional mail), newest first, with what became of it and the opens and clicks it drew.
 */

type ContactEmail = Schemas['ContactEmail'];
const PER_PAGE = 10;

const contactEmailsQuery = (project: string, id: string, page: number) =>
  projectQuery(project, ['contact', id, 'emails', page], () =>
    api.get('/v1/contacts/{id}/emails', {
      project,
      path: { id },
      query: { limit: PER_PAGE, offset: (page - 1) * PER_PAGE },
    }),
  );

/** Where the message came from: its campaign, its flow, or the app (transactional mail). */
function Origin({ email }: { email: ContactEmail }) {
  if (email.campaign)
    return (
      <>
        Campaign{' '}
        <Link to="/campaigns/$campaignId" params={{ campaignId: email.campaign.id }}>
          {email.campaign.name ?? 'deleted'}
        </Link>
      </>
    );
  if (email.flow)
    return (
      <>
        Flow{' '}
        <Link to="/flows/$flowId" params={{ flowId: email.flow.id }}>
          {email.flow.name ?? 'deleted'}
        </Link>
      </>
    );
  return <>{email.stream === 'transactional' ? 'Sent by your app' : email.stream}</>;
}

/** Opens or clicks by people, with those by machines (proxies, link scanners) said apart. */
function Engagement({ counts, noun }: { counts: ContactEmail['opens']; noun: string }) {
  return (
    <>
      {formatNumber(counts.people)}
      {counts.last_at && <span className="muted small"> · last {formatDateTime(counts.last_at)}</span>}
      {counts.machines > 0 && (
        <span className="muted small">
          {' '}
          (+{formatNumber(counts.machines)} {noun} by machines)
        </span>
      )}
    </>
  );
}

const BOUNCE_WORDS: Record<string, string> = {
  hard: 'the address does not accept mail; it is suppressed',
  block: 'the receiving server refused the sender or the content',
};

/** The status, with a bounce, a complaint or an unsubscribe said in words. */
function Outcome({ email }: { email: ContactEmail }) {
  const notes = [
    email.bounce &&
      `Bounced ${formatDateTime(email.bounce.at)}${
        email.bounce.type && BOUNCE_WORDS[email.bounce.type] ? `: ${BOUNCE_WORDS[email.bounce.type]}` : ''
      }`,
    email.complained_at && `Marked as spam ${formatDateTime(email.complained_at)}`,
    email.unsubscribed_at && `Unsubscribed through it ${formatDateTime(email.unsubscribed_at)}`,
  ].filter(Boolean);
  return (
    <>
      <StatusBadge status={email.status} />
      {notes.map((n) => (
        <p key={String(n)} className="muted small">
          {n}
        </p>
      ))}
    </>
  );
}

export function ContactMessages({ contactId }: { contactId: string }) {
  const { project } = useProject();
  const [page, setPage] = useState(1);
  const emails = useQuery({
    ...contactEmailsQuery(project.id, contactId, page),
    placeholderData: keepPreviousData,
  });
  return (
    <Section title="Messages" wide>
      <ErrorMessage error={emails.error} />
      {emails.data &&
        (emails.data.total === 0 ? (
          <p className="muted">No messages sent to this address yet.</p>
        ) : (
          <>
            <DataTable
              caption="Messages sent to this contact"
              rows={emails.data.data}
              columns={[
                {
                  label: 'Subject',
                  cell: (e) => (
                    <Link to="/emails/$emailId" params={{ emailId: e.id }}>
                      {e.subject}
                    </Link>
                  ),
                },
                { label: 'Campaign or flow', cell: (e) => <Origin email={e} /> },
                { label: 'Sent', cell: (e) => formatDateTime(e.sent_at ?? e.created_at) },
                { label: 'Status', cell: (e) => <Outcome email={e} /> },
                { label: 'Opens', cell: (e) => <Engagement counts={e.opens} noun="opens" /> },
                { label: 'Clicks', cell: (e) => <Engagement counts={e.clicks} noun="clicks" /> },
              ]}
            />
            <Pager
              page={page}
              total={emails.data.total}
              perPage={PER_PAGE}
              noun={['message', 'messages']}
              onPage={setPage}
            />
          </>
        ))}
    </Section>
  );
}

import { useMutation, useQuery } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import {
  type InboundAttachment,
  type InboundEmail,
  inboundAttachmentBlob,
  inboundQuery,
  inboundRawQuery,
} from '../../api/sending.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { MessageTabs } from '../../components/MessageTabs.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/inbound/$inboundId');

function Summary({ m }: { m: InboundEmail }) {
  const rows: [string, string][] = [
    ['From', m.from ?? '—'],
    ['To', m.to.join(', ') || '—'],
    ...(m.cc.length ? ([['Cc', m.cc.join(', ')]] as [string, string][]) : []),
    ...(m.reply_to.length ? ([['Reply-To', m.reply_to.join(', ')]] as [string, string][]) : []),
    ['Sent', formatDateTime(m.sent_at)],
    ['Received', formatDateTime(m.created_at)],
    ['Size', `${formatNumber(m.size_bytes)} bytes`],
    ['Message-ID', m.message_id ?? '—'],
    ['Envelope from', m.envelope.mail_from ?? '<>'],
    ['Envelope to', m.envelope.rcpt_to.join(', ')],
    ['Sending server', [m.envelope.remote_ip, m.envelope.helo].filter(Boolean).join(' · ') || '—'],
  ];
  return <Facts className="facts break" rows={rows} />;
}

function Authentication({ m }: { m: InboundEmail }) {
  const a = m.auth;
  return (
    <dl className="facts">
      <div className="fact">
        <dt>SPF</dt>
        <dd>
          <StatusBadge status={a.spf} />
        </dd>
      </div>
      <div className="fact">
        <dt>DKIM</dt>
        <dd className="break">
          {a.dkim.length === 0
            ? 'no signature'
            : a.dkim.map((d) => (
                <span key={`${d.domain} ${d.selector}`} className="block">
                  <StatusBadge status={d.result} />
                  {d.domain ? ` ${d.domain}` : ''}
                  {d.selector ? ` (${d.selector})` : ''}
                </span>
              ))}
        </dd>
      </div>
      <div className="fact">
        <dt>DMARC</dt>
        <dd>
          <StatusBadge status={a.dmarc} /> {a.dmarc_policy ? `policy ${a.dmarc_policy}` : ''}
        </dd>
      </div>
      <div className="fact">
        <dt>ARC</dt>
        <dd>
          <StatusBadge status={a.arc} />
        </dd>
      </div>
      <div className="fact">
        <dt>Spam</dt>
        <dd className="break">{m.spam.flagged ? `flagged: ${m.spam.reasons.join(', ')}` : 'not flagged'}</dd>
      </div>
    </dl>
  );
}

/** Fetches one attachment (it needs the project header) and hands it to the browser as a file. */
function DownloadButton({ emailId, attachment }: { emailId: string; attachment: InboundAttachment }) {
  const { project } = useProject();
  const name = attachment.filename ?? `attachment-${attachment.position}`;
  const download = useMutation({
    mutationFn: () => inboundAttachmentBlob(project.id, emailId, attachment.position),
    onSuccess: (blob) => {
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    },
  });
  return (
    <>
      <button type="button" className="btn" onClick={() => download.mutate()} disabled={download.isPending}>
        Download<span className="visually-hidden"> {name}</span>
      </button>
      <ErrorMessage error={download.error} />
    </>
  );
}

function Attachments({ m }: { m: InboundEmail }) {
  if (m.attachments.length === 0) return <p>No attachments.</p>;
  return (
    <ul className="plain-list">
      {m.attachments.map((a) => (
        <li key={a.position} className="attachment">
          <span className="break">
            <strong>{a.filename ?? `attachment ${a.position + 1}`}</strong>{' '}
            <span className="muted small">
              {a.content_type}, {formatNumber(a.size)} bytes
            </span>
          </span>
          <DownloadButton emailId={m.id} attachment={a} />
        </li>
      ))}
    </ul>
  );
}

function RawSource({ emailId }: { emailId: string }) {
  const { project } = useProject();
  const raw = useQuery(inboundRawQuery(project.id, emailId));
  return (
    <>
      <ErrorMessage error={raw.error} />
      {raw.isPending && <p role="status">Loading…</p>}
      {typeof raw.data === 'string' && <pre className="source">{raw.data}</pre>}
    </>
  );
}

/** The message's content as it was received. */
function Content({ m }: { m: InboundEmail }) {
  return (
    <MessageTabs
      html={m.html}
      previewTitle="Preview of the message's HTML"
      text={m.text ?? 'The message has no text part.'}
      headers={<pre className="source">{m.headers.map((h) => `${h.name}: ${h.value}`).join('\n')}</pre>}
      raw={<RawSource emailId={m.id} />}
    />
  );
}

/** One received message: addresses, authentication results, attachments, headers, text and HTML. */
export default function InboundDetail() {
  const { inboundId } = route.useParams();
  const { project } = useProject();
  const message = useQuery(inboundQuery(project.id, inboundId));
  const m = message.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/inbound">Back to inbound</Link>
      </p>
      <PageHeader title={m ? m.subject || '(no subject)' : 'Received message'} />
      <Loaded query={message}>
        {(m) => (
          <div className="detail">
            <Section title="Message">
              <Summary m={m} />
            </Section>
            <Section title="Authentication">
              <Authentication m={m} />
            </Section>
            <Section title="Attachments" wide>
              <Attachments m={m} />
            </Section>
            <Section title="Content" wide>
              <Content m={m} />
            </Section>
          </div>
        )}
      </Loaded>
    </>
  );
}

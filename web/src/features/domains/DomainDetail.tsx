import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { useId } from 'react';
import { type DnsRecord, type Domain, domainQuery, domains, domainsQuery } from '../../api/sending.ts';
import { inPeoplesWords } from '../../api/words.ts';
import { ErrorMessage, Notice } from '../../components/Alert.tsx';
import { CopyButton } from '../../components/CopyButton.tsx';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StatusBadge } from '../../components/StatusBadge.tsx';
import { canManage, useProject } from '../../project.tsx';
import { InboundCard, RateCard, RemoveDomain, WarmupCard } from './DomainSettings.tsx';

const route = getRouteApi('/app/domains/$domainId');

/** A short title for a record from its purpose ("DKIM: the public key…" → "DKIM"). */
function recordTitle(record: DnsRecord): string {
  const head = record.purpose.split(/[:(,]/)[0]?.trim() || record.purpose;
  return `${record.type} · ${head}`;
}

/** One value to publish, shown in full (long DKIM keys wrap) with its copy button. */
function CopyValue({ term, value }: { term: string; value: string }) {
  return (
    <div className="fact">
      <dt>{term}</dt>
      <dd className="record-value">
        <code>{value}</code>
        <CopyButton value={value} label={`Copy ${term.toLowerCase()}`} />
      </dd>
    </div>
  );
}

function RecordCard({ record }: { record: DnsRecord }) {
  const id = useId();
  return (
    <li>
      <section className="card record" aria-labelledby={id}>
        <div className="record-head">
          <h3 id={id}>{recordTitle(record)}</h3>
          <StatusBadge status={record.status} />
          <span className="muted small">{record.required ? 'required' : 'recommended'}</span>
        </div>
        <dl className="facts">
          <div className="fact">
            <dt>Type</dt>
            <dd>{record.type}</dd>
          </div>
          <CopyValue term="Name" value={record.name} />
          <CopyValue term="Value" value={record.value} />
          {record.priority !== undefined && (
            <div className="fact">
              <dt>Priority</dt>
              <dd>{record.priority}</dd>
            </div>
          )}
          {record.status !== 'verified' && record.found && record.found.length > 0 && (
            <div className="fact">
              <dt>DNS answered</dt>
              <dd className="break">
                <code>{record.found.join(' | ')}</code>
              </dd>
            </div>
          )}
        </dl>
        <p className="muted small">{inPeoplesWords(record.purpose)}</p>
      </section>
    </li>
  );
}

/** A name under .localhost in a record: the server's development default, which no one can publish or look up. */
const LOCAL_NAME = /[a-z0-9-]\.localhost\.?(?![a-z0-9-])/i;

/** Whether the records name this server by its development names (its shared domain is still under .localhost). */
export function hasPlaceholderRecords(domain: Pick<Domain, 'records'>): boolean {
  return domain.records.some((r) => LOCAL_NAME.test(r.value) || LOCAL_NAME.test(r.name));
}

/**
 * Said plainly when the records name this server's development names: they are placeholders, and
 * it is for whoever runs the server to give it its real names before anyone can publish them.
 */
export function PlaceholderNotice() {
  return (
    <Notice tone="warning">
      <strong>These records are placeholders.</strong> This server still has its development names, which end
      in .localhost: no DNS provider can publish them and no receiver can look them up, so the domain cannot
      be verified yet. Whoever runs this server must first give it its real names (the setting
      POSTHORN_SHARED_DOMAIN, then a restart); this page then shows the records to publish. The server's
      Production readiness page lists what else is left before real mail can flow.
    </Notice>
  );
}

/** The domain's status, and before it the notice that its records are placeholders when they are. */
function StatusNote({ domain }: { domain: Domain }) {
  if (!hasPlaceholderRecords(domain)) return <DomainStatus domain={domain} />;
  return (
    <>
      <PlaceholderNotice />
      <DomainStatus domain={domain} />
    </>
  );
}

function DomainStatus({ domain }: { domain: Domain }) {
  if (domain.status === 'verified')
    return (
      <Notice tone="success">
        Verified {formatDateTime(domain.verified_at)}: mail from @{domain.name} is signed with its own key.
      </Notice>
    );
  if (domain.status === 'failed')
    return (
      <Notice tone="warning">
        Required records are no longer found in DNS: mail from @{domain.name} is refused until they are back.
        Publish them again and check.
      </Notice>
    );
  return (
    <Notice>
      Publish the required records below at your DNS provider, then check. DNS changes can take a while to
      show; Posthorn also checks by itself every hour.
    </Notice>
  );
}

/** Looks the records up in DNS now (POST /v1/domains/{id}/check); the answer is the domain's new state. */
function CheckNow({ domain }: { domain: Domain }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const check = useMutation({
    mutationFn: () => domains.check(project.id, domain.id),
    onSuccess: (checked) => {
      queryClient.setQueryData(domainQuery(project.id, domain.id).queryKey, checked);
      queryClient.invalidateQueries({ queryKey: domainsQuery(project.id).queryKey });
    },
  });
  return (
    <div className="check-now">
      <button type="button" className="btn primary" onClick={() => check.mutate()} disabled={check.isPending}>
        {check.isPending ? 'Checking…' : 'Check now'}
      </button>
      <p className="muted small" role="status">
        {check.isSuccess
          ? `Checked just now: ${check.data.status}.`
          : `Last checked: ${domain.last_checked_at ? formatDateTime(domain.last_checked_at) : 'never'}`}
      </p>
      <ErrorMessage error={check.error} />
    </div>
  );
}

/** A sending domain: each DNS record to publish with copy buttons and its status, checks, inbound, rate. */
export default function DomainDetail() {
  const { domainId } = route.useParams();
  const { project } = useProject();
  const manage = canManage(project);
  const domain = useQuery(domainQuery(project.id, domainId));
  const d = domain.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/domains">Back to domains</Link>
      </p>
      <PageHeader title={d ? d.name : 'Domain'}>{d && <StatusBadge status={d.status} />}</PageHeader>
      <Loaded query={domain}>
        {(d) => (
          <>
            <StatusNote domain={d} />
            {manage && <CheckNow domain={d} />}
            <p>
              <Link to="/domains/$domainId/dmarc" params={{ domainId: d.id }}>
                DMARC and TLS reports
              </Link>{' '}
              <span className="muted">what receivers report about mail sent as {d.name}</span>
            </p>
            <h2>DNS records</h2>
            <ol className="records">
              {d.records.map((r) => (
                <RecordCard key={`${r.type} ${r.name}`} record={r} />
              ))}
            </ol>
            <div className="detail">
              <InboundCard domain={d} manage={manage} />
              <RateCard domain={d} manage={manage} />
              <WarmupCard domain={d} manage={manage} />
            </div>
            {manage && <RemoveDomain domain={d} />}
          </>
        )}
      </Loaded>
    </>
  );
}

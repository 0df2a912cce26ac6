import { useQuery } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { type DomainDmarc, domainDmarcQuery, domainQuery } from '../../api/sending.ts';
import { inPeoplesWords } from '../../api/words.ts';
import { CopyField } from '../../components/CopyButton.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { canManage, useProject } from '../../project.tsx';
import { DmarcChart } from './DmarcChart.tsx';
import { DmarcEmpty } from './DmarcEmpty.tsx';
import { DmarcSources } from './DmarcSources.tsx';

const route = getRouteApi('/app/domains/$domainId/dmarc');

type Report = DomainDmarc['reports'][number];

const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`);

/** The policy coach: where the domain is on the road to p=reject, and the record for the next step. */
function Coach({ coach }: { coach: DomainDmarc['coach'] }) {
  return (
    <Section title="Policy coach" wide>
      <p role="status">{inPeoplesWords(coach.message)}</p>
      {coach.proposal && (
        <>
          <p>
            Publish this record in place of the current one (a <code>{coach.proposal.record.type}</code>{' '}
            record at <code>{coach.proposal.record.name}</code>):
          </p>
          <CopyField
            label={`The DMARC record for p=${coach.proposal.p}`}
            value={coach.proposal.record.value}
            copyLabel="Copy record"
          />
        </>
      )}
    </Section>
  );
}

function Tls({ tls }: { tls: DomainDmarc['tls'] }) {
  if (tls.policies.length === 0) return null;
  return (
    <>
      <h2>TLS sessions</h2>
      <DataTable
        caption="TLS sessions reported, by policy domain"
        rowKey={(t) => `${t.policy_domain} ${t.policy_type}`}
        rows={tls.policies}
        columns={[
          { label: 'Policy domain', cell: (t) => t.policy_domain },
          { label: 'Policy', cell: (t) => t.policy_type },
          { label: 'Successful', cell: (t) => formatNumber(t.successful) },
          { label: 'Failed', cell: (t) => formatNumber(t.failed) },
        ]}
      />
      {tls.failures.length > 0 && (
        <DataTable
          caption="TLS failures by receiving domain and type"
          rowKey={(f) => `${f.policy_domain} ${f.receiving_mx} ${f.result_type}`}
          rows={tls.failures}
          columns={[
            { label: 'Receiving domain', cell: (f) => f.policy_domain },
            { label: 'MX host', cell: (f) => f.receiving_mx ?? '—' },
            { label: 'Failure', cell: (f) => <code>{f.result_type}</code> },
            { label: 'Sessions', cell: (f) => formatNumber(f.sessions) },
          ]}
        />
      )}
    </>
  );
}

function Reports({ reports }: { reports: Report[] }) {
  return (
    <>
      <h2>Reports received</h2>
      <DataTable<Report>
        caption="The latest reports received"
        rows={reports}
        columns={[
          {
            label: 'Reporter',
            cell: (r) => (
              <>
                {r.reporter ?? (r.kind === 'unreadable' ? 'Could not be read' : '—')}
                {!r.authenticated && r.kind !== 'unreadable' && ' (unauthenticated: not counted)'}
              </>
            ),
          },
          {
            label: 'Kind',
            cell: (r) => (r.kind === 'tls' ? 'TLS' : r.kind === 'aggregate' ? 'DMARC' : 'Unreadable'),
          },
          {
            label: 'Period',
            cell: (r) => (r.begin ? `${formatDateTime(r.begin)} – ${formatDateTime(r.end)}` : '—'),
          },
          {
            label: 'Messages',
            cell: (r) => (r.kind === 'unreadable' ? r.reason : formatNumber(r.messages)),
          },
          { label: 'Received', cell: (r) => formatDateTime(r.received_at) },
        ]}
      />
    </>
  );
}

/**
 * What receivers report about a domain (issue 34): volume and alignment by day, the sources that
 * sent as it (Posthorn's own, labelled, unknown), the policy coach, TLS sessions and failures, and
 * each report received (one that could not be read with the reason). Reports whose mail was not
 * authenticated for their reporter are counted for nothing and said apart (issue 47).
 */
export default function DomainDmarcScreen() {
  const { domainId } = route.useParams();
  const { project } = useProject();
  const domain = useQuery(domainQuery(project.id, domainId));
  const dmarc = useQuery(domainDmarcQuery(project.id, domainId));
  const name = domain.data?.name ?? 'Domain';
  return (
    <>
      <p className="crumbs">
        <Link to="/domains/$domainId" params={{ domainId }}>
          Back to {name}
        </Link>
      </p>
      <PageHeader title={`DMARC reports: ${name}`} />
      <Loaded query={dmarc}>
        {(d) =>
          d.reports.length === 0 ? (
            <DmarcEmpty domain={domain.data} />
          ) : (
            <>
              <Section title={`Summary, ${d.window.from} to ${d.window.to}`} wide>
                <Facts
                  rows={[
                    ['Messages reported', formatNumber(d.summary.messages)],
                    [
                      'Passed DMARC',
                      `${formatNumber(d.summary.aligned)} (${percent(d.summary.aligned_rate)})`,
                    ],
                    ['Aggregate reports', formatNumber(d.summary.reports)],
                    ['Published policy', d.summary.policy ? `p=${d.summary.policy}` : '—'],
                  ]}
                />
                {d.unauthenticated.reports > 0 && (
                  <p role="note">
                    Not counted: {formatNumber(d.unauthenticated.reports)} reports (
                    {formatNumber(d.unauthenticated.messages)} messages) whose mail did not pass DMARC for the
                    reporter it names ({d.unauthenticated.reporters.join(', ')}). Anyone can mail the report
                    address: only authenticated reports count here, for the coach and the alerts.
                  </p>
                )}
                {d.series.some((s) => s.messages > 0) && <DmarcChart series={d.series} />}
              </Section>
              <Coach coach={d.coach} />
              <DmarcSources dmarc={d} domainId={domainId} manage={canManage(project)} />
              <Tls tls={d.tls} />
              <Reports reports={d.reports} />
            </>
          )
        }
      </Loaded>
    </>
  );
}

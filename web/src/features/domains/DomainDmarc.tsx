import { useQuery } from '@tanstack/react-query';
import { getRouteApi, Link } from '@tanstack/react-router';
import { type DomainDmarc, domainDmarcQuery, domainQuery } from '../../api/sending.ts';
import { DataTable } from '../../components/DataTable.tsx';
import { formatDateTime, formatNumber } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';

const route = getRouteApi('/app/domains/$domainId/dmarc');

type Report = DomainDmarc['reports'][number];

const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`);

/**
 * What receivers report about a domain (issue 34): the messages their DMARC aggregate reports
 * counted and how many passed, the addresses that sent as the domain, TLS sessions by policy
 * domain, and each report received (one that could not be read with the reason).
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
            <p className="empty">
              No report yet. Receivers send one a day once the domain's DMARC record (with its{' '}
              <code>rua</code>) is published: see the records on the domain's page.
            </p>
          ) : (
            <>
              <Section title="Summary" wide>
                <Facts
                  rows={[
                    ['Messages reported', formatNumber(d.summary.messages)],
                    [
                      'Passed DMARC',
                      `${formatNumber(d.summary.aligned)} (${percent(d.summary.aligned_rate)})`,
                    ],
                    ['Aggregate reports', formatNumber(d.summary.reports)],
                  ]}
                />
              </Section>
              <h2>Sending sources</h2>
              <DataTable
                caption="The addresses that sent mail as the domain"
                rowKey={(s) => s.source_ip}
                rows={d.sources}
                columns={[
                  { label: 'Address', cell: (s) => <code>{s.source_ip}</code> },
                  { label: 'Messages', cell: (s) => formatNumber(s.messages) },
                  { label: 'Passed DMARC', cell: (s) => percent(s.messages ? s.aligned / s.messages : null) },
                  { label: 'Reporters', cell: (s) => formatNumber(s.reporters) },
                ]}
              />
              {d.tls.length > 0 && (
                <>
                  <h2>TLS sessions</h2>
                  <DataTable
                    caption="TLS sessions reported, by policy domain"
                    rowKey={(t) => t.policy_domain}
                    rows={d.tls}
                    columns={[
                      { label: 'Policy domain', cell: (t) => t.policy_domain },
                      { label: 'Successful', cell: (t) => formatNumber(t.successful) },
                      { label: 'Failed', cell: (t) => formatNumber(t.failed) },
                    ]}
                  />
                </>
              )}
              <h2>Reports received</h2>
              <DataTable<Report>
                caption="The latest reports received"
                rows={d.reports}
                columns={[
                  {
                    label: 'Reporter',
                    cell: (r) => r.reporter ?? (r.kind === 'unreadable' ? 'Could not be read' : '—'),
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
          )
        }
      </Loaded>
    </>
  );
}

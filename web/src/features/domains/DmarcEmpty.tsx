import type { Domain, DomainDmarc } from '../../api/sending.ts';
import { CopyField } from '../../components/CopyButton.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { formatNumber } from '../../components/format.ts';
import { Section } from '../../components/Section.tsx';
import { DmarcChart } from './DmarcChart.tsx';

/**
 * A domain's DMARC page before any report came (issue 48, build item 8): what to publish for the
 * reports to come here (the domain's DMARC record, whose rua names this server's report address
 * for it, as the server gives it), what the page will then show, and a sample of it, said to be one.
 */

type Day = DomainDmarc['series'][number];

/** A week of made-up figures: a domain whose own mail passes, and a few messages forged in its name. */
function sampleWeek(): Day[] {
  const volumes = [1180, 1320, 1260, 940, 610, 1410, 1350];
  const today = Date.now();
  return volumes.map((messages, i) => {
    const forged = [12, 0, 31, 4, 0, 18, 7][i] ?? 0;
    const day = new Date(today - (volumes.length - i) * 86_400_000).toISOString().slice(0, 10);
    return {
      day,
      messages,
      aligned: messages - forged,
      known_messages: messages - forged,
      known_aligned: messages - forged,
    };
  });
}

const SAMPLE_SOURCES = [
  { source: 'This server (Posthorn)', messages: 7998, passed: '100.0 %' },
  { source: 'Your help desk (labelled by you)', messages: 0, passed: '—' },
  { source: '203.0.113.45, unknown', messages: 72, passed: '0.0 %' },
];

/** The record the domain publishes for its reports, and the address they go to. */
function dmarcRecord(domain: Domain | undefined) {
  const record = domain?.records.find((r) => r.name.startsWith('_dmarc.'));
  const address = record?.value.match(/rua=mailto:([^;\s]+)/)?.[1];
  return record ? { record, address } : null;
}

function Publish({ domain }: { domain: Domain | undefined }) {
  const found = dmarcRecord(domain);
  const name = domain?.name ?? 'the domain';
  if (!found)
    return (
      <p>
        Receivers send reports once {name} publishes a DMARC record that asks for them: the domain's page
        lists the records to publish.
      </p>
    );
  return (
    <>
      <p className="break">
        Receivers (Gmail, Outlook, Yahoo and most others) send a report a day of the mail they received as{' '}
        {name}, once the domain publishes a DMARC record that asks for them. Publish this TXT record at{' '}
        <code>{found.record.name}</code>
        {found.address && (
          <>
            : it sends the reports to <strong>{found.address}</strong>, this server's report address for the
            domain, and they appear here
          </>
        )}
        . It asks receivers for nothing else yet (p=none): the policy coach proposes the next step once
        reports show your mail passes.
      </p>
      <CopyField label="The DMARC record to publish" value={found.record.value} copyLabel="Copy record" />
      <p className="muted small">
        {found.record.status === 'verified'
          ? 'The record is published: the first reports come within a day or two of the mail sent since.'
          : 'Reports start within a day or two after the record is published and mail is sent as the domain.'}
      </p>
    </>
  );
}

/** The empty DMARC page: what to publish, what will appear, and a sample of it. */
export function DmarcEmpty({ domain }: { domain: Domain | undefined }) {
  return (
    <>
      <Section title="No report yet" wide>
        <Publish domain={domain} />
      </Section>
      <Section title="What will appear here" wide>
        <ul>
          <li>The messages receivers saw each day, and how many passed DMARC (aligned DKIM or SPF).</li>
          <li>
            Every address that sent mail as the domain: this server, the other services you label (a help
            desk, a shop), and unknown ones, which may be forgeries.
          </li>
          <li>
            The policy coach: when it is safe to ask receivers to quarantine, then reject, failing mail.
          </li>
          <li>Failed TLS sessions to your mail servers, and each report received.</li>
        </ul>
      </Section>
      <Section
        title={
          <>
            Sample <span className="badge">made-up figures, not your domain's</span>
          </>
        }
        wide
      >
        <p className="muted">A week as this page shows it once reports come in.</p>
        <DmarcChart series={sampleWeek()} />
        <DataTable
          caption="Sample: the sources that sent as the domain"
          rows={SAMPLE_SOURCES}
          rowKey={(s) => s.source}
          columns={[
            { label: 'Source', cell: (s) => s.source },
            { label: 'Messages', cell: (s) => formatNumber(s.messages) },
            { label: 'Passed DMARC', cell: (s) => s.passed },
          ]}
        />
      </Section>
    </>
  );
}

import { useQuery } from '@tanstack/react-query';
import { sessionQuery } from '../../api/endpoints.ts';
import { type ReadinessCheck, readinessQuery } from '../../api/readiness.ts';
import { inPeoplesWords } from '../../api/words.ts';
import { formatDateTime } from '../../components/format.ts';
import { Loaded } from '../../components/Loaded.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';

const STATUS: Record<ReadinessCheck['status'], { word: string; tone: string }> = {
  pass: { word: 'Passed', tone: 'good' },
  fail: { word: 'Failed', tone: 'bad' },
  warn: { word: 'Warning', tone: 'warn' },
  skip: { word: 'Skipped', tone: 'muted' },
};

const GROUPS: { group: ReadinessCheck['group']; title: string }[] = [
  { group: 'web', title: 'Web address and certificates' },
  { group: 'shared_domain', title: 'Shared domain' },
  { group: 'delivery', title: 'Delivery' },
];

function Checks({ label, checks }: { label: string; checks: ReadinessCheck[] }) {
  return (
    <ul className="checklist" aria-label={label}>
      {checks.map((check) => {
        const status = STATUS[check.status];
        return (
          <li key={check.id} className="check">
            <p className="check-head">
              <span className={`badge badge-${status.tone}`}>{status.word}</span>{' '}
              <strong>{check.title}</strong>
            </p>
            <p className="small break">{inPeoplesWords(check.detail)}</p>
            {check.fix && check.status !== 'pass' && (
              <p className="small break">
                <strong>What to do:</strong> {inPeoplesWords(check.fix)}
              </p>
            )}
          </li>
        );
      })}
    </ul>
  );
}

/**
 * The operator's Production readiness screen: each thing between this server and real delivery
 * (its public address and certificates, the shared domain's names and records, the ways mail
 * leaves), checked by the server when the screen opens, with what to do about each that fails.
 * Only the server's operator is shown it, as the Routes screen.
 */
export default function Readiness() {
  const session = useQuery(sessionQuery);
  const report = useQuery({ ...readinessQuery, enabled: session.data?.operator === true });
  if (!session.data?.operator)
    return (
      <>
        <PageHeader title="Production readiness" />
        <p>
          This screen is for the operator of this server, who set it up: ask them what is left before real
          mail can flow.
        </p>
      </>
    );
  return (
    <>
      <PageHeader title="Production readiness">
        <button
          type="button"
          className="btn"
          disabled={report.isFetching}
          onClick={() => void report.refetch()}
        >
          {report.isFetching ? 'Checking…' : 'Check again'}
        </button>
      </PageHeader>
      <Loaded query={report} loading="Checking this server…">
        {(data) => {
          const failed = data.checks.filter((c) => c.status === 'fail').length;
          return (
            <>
              <p role="status">
                {failed === 0
                  ? 'Ready for production: nothing failed.'
                  : `${failed} ${failed === 1 ? 'check failed' : 'checks failed'}: this server is not ready for real delivery yet.`}{' '}
                <span className="muted">
                  Checked {formatDateTime(data.checked_at)}. The same checks print with posthorn admin doctor.
                </span>
              </p>
              {GROUPS.map(({ group, title }) => {
                const checks = data.checks.filter((c) => c.group === group);
                if (checks.length === 0) return null;
                return (
                  <section key={group}>
                    <h2>{title}</h2>
                    <Checks label={title} checks={checks} />
                  </section>
                );
              })}
            </>
          );
        }}
      </Loaded>
    </>
  );
}

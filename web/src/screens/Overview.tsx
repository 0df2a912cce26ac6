import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useId } from 'react';
import { accountStatusQuery, limitsQuery } from '../api/endpoints.ts';
import type { Limits } from '../api/types.ts';
import { ErrorMessage } from '../components/Alert.tsx';
import { formatNumber } from '../components/format.ts';
import { PageHeader } from '../components/PageHeader.tsx';
import { useProject } from '../project.tsx';

function Usage({ label, used, limit }: { label: string; used: number; limit: number | null }) {
  const id = useId();
  return (
    <div className="usage">
      <p id={id} className="usage-label">
        {label}
      </p>
      <p className="usage-figure">
        {formatNumber(used)}
        {limit ? (
          <span className="muted"> of {formatNumber(limit)}</span>
        ) : (
          <span className="muted"> (unmetered)</span>
        )}
      </p>
      {limit ? <progress aria-labelledby={id} value={Math.min(used, limit)} max={limit} /> : null}
    </div>
  );
}

function PlanCard({ limits }: { limits: Limits }) {
  const features = Object.entries(limits.features);
  return (
    <section className="card" aria-labelledby="plan-title">
      <h2 id="plan-title">Plan: {limits.plan_name}</h2>
      <Usage
        label="Messages sent this month"
        used={limits.sending.this_month}
        limit={limits.sending.included_per_month}
      />
      {limits.sending.over_limit && (
        <p className="alert alert-warning">
          This project has used its monthly allowance: sending is refused until next month or an upgrade.
        </p>
      )}
      <Usage label="Contacts" used={limits.contacts.count} limit={limits.contacts.limit || null} />
      {features.length > 0 && (
        <>
          <h3>Features</h3>
          <ul className="features">
            {features.map(([name, on]) => (
              <li key={name} className={on ? undefined : 'muted'}>
                {name.replaceAll('_', ' ')}: {on ? 'included' : 'not included'}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function SendingCard() {
  const { project } = useProject();
  const me = useQuery(accountStatusQuery(project.id));
  if (me.isError) return <ErrorMessage error={me.error} />;
  if (!me.data) return null;
  const { sending, footer } = me.data;
  return (
    <section className="card" aria-labelledby="sending-title">
      <h2 id="sending-title">Sending</h2>
      <p>
        <span className={`badge ${sending.ready ? 'badge-good' : 'badge-warn'}`}>
          {sending.ready ? 'Ready to send' : 'Not ready to send'}
        </span>
      </p>
      <p>{sending.note}</p>
      <dl className="facts">
        <dt>Default sender</dt>
        <dd>
          <code>{sending.default_from}</code>
        </dd>
        <dt>Verified domains</dt>
        <dd>{sending.verified_domains.length ? sending.verified_domains.join(', ') : 'none yet'}</dd>
        <dt>Footer address</dt>
        <dd>{footer.is_your_own_address ? footer.address : 'the placeholder (set your postal address)'}</dd>
      </dl>
    </section>
  );
}

/** The project at a glance: plan and usage (GET /v1/limits) and whether it can send (GET /v1/me). */
export default function Overview() {
  const { project } = useProject();
  const limits = useQuery(limitsQuery(project.id));
  return (
    <>
      <PageHeader title="Overview" />
      <div className="grid">
        {limits.isError ? (
          <ErrorMessage error={limits.error} />
        ) : limits.data ? (
          <PlanCard limits={limits.data} />
        ) : null}
        <SendingCard />
      </div>
      {/*
        TODO(dashboard, issue 18): the chart of sent, delivered, bounced and complained mail per day,
        with bounce and complaint rates against the mailbox providers' thresholds, needs a statistics
        endpoint in /v1 (say GET /v1/emails/stats?days=30 answering one row per day); the API has
        none yet, and counting from pages of GET /v1/emails would not scale. Until then the plan
        and usage above stand in.
      */}
      <section className="card" aria-labelledby="activity-title">
        <h2 id="activity-title">Delivery per day</h2>
        <p className="muted">
          The daily chart of sent, delivered, bounced and complained mail comes with the API's statistics
          endpoint. Meanwhile, the <Link to="/emails">emails log</Link> shows every message and its events.
        </p>
      </section>
    </>
  );
}

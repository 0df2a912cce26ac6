import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { Suspense, use, useId, useState } from 'react';
import { accountStatusQuery, type Limits, limitsQuery } from '../../api/endpoints.ts';
import {
  type DayCounts,
  DEFAULT_STATS_DAYS,
  type EmailStats,
  emailStatsQuery,
  type Rate,
  STATS_PERIODS,
} from '../../api/overview.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { type CheckItem, Checklist } from '../../components/Checklist.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { SelectField } from '../../components/Field.tsx';
import { formatDate, formatNumber } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { PlanFeatures } from '../../components/PlanFeatures.tsx';
import { Facts, Section } from '../../components/Section.tsx';
import { useProject } from '../../project.tsx';
import { BreakerBanner } from './BreakerBanner.tsx';

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
  return (
    <Section title={`Plan: ${limits.plan_name}`}>
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
      <PlanFeatures features={limits.features} />
    </Section>
  );
}

/**
 * Whether the project can send, item by item, each with the screen that fixes it: "Ready to send"
 * only when every item passes (transactional mail may already go from the shared address while
 * marketing waits on the footer, which the badge says too).
 */
function SendingCard() {
  const { project } = useProject();
  const me = useQuery(accountStatusQuery(project.id));
  if (me.isError) return <ErrorMessage error={me.error} />;
  if (!me.data) return null;
  const { sending, footer } = me.data;
  const domains = sending.verified_domains;
  const items: CheckItem[] = [
    {
      key: 'account',
      label: 'Account email',
      status: sending.email_confirmed ? 'ok' : 'failing',
      message: sending.email_confirmed
        ? 'Confirmed.'
        : 'Not confirmed: nothing can be sent until the workspace owner signs in here with the code emailed to them.',
      fix: <Link to="/account">Your account</Link>,
    },
    {
      key: 'footer',
      label: 'Footer postal address',
      status: footer.is_your_own_address ? 'ok' : 'failing',
      message: footer.is_your_own_address
        ? footer.address
        : 'The placeholder: campaigns and flows are refused until the footer carries your postal address.',
      fix: <Link to="/settings">Set it in Settings</Link>,
    },
    {
      key: 'domain',
      label: 'Sending domain',
      status: domains.length > 0 ? 'ok' : 'failing',
      message:
        domains.length > 0
          ? `Verified: ${domains.join(', ')}.`
          : `None verified yet: mail can go only from ${sending.default_from}, within the shared domain's daily cap.`,
      fix: <Link to="/domains">Add a domain in Domains</Link>,
    },
  ];
  const all = items.every((i) => i.status === 'ok');
  return (
    <Section title="Sending">
      <p>
        <span className={`badge ${all ? 'badge-good' : 'badge-warn'}`}>
          {all ? 'Ready to send' : sending.ready ? 'Partly ready to send' : 'Not ready to send'}
        </span>
      </p>
      <Checklist label="What sending needs" items={items} />
      <Facts rows={[['Default sender', <code key="from">{sending.default_from}</code>]]} />
    </Section>
  );
}

const SERIES: { key: keyof DayCounts; label: string; colour: string; dash?: string }[] = [
  { key: 'sent', label: 'Sent', colour: '#1d4ed8' },
  { key: 'delivered', label: 'Delivered', colour: '#15803d', dash: '8 4' },
  { key: 'bounced', label: 'Bounced', colour: '#b42318', dash: '3 3' },
  { key: 'complained', label: 'Complained', colour: '#7e22ce', dash: '10 3 2 3' },
];

const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 2 });
const shortDate = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
/** A UTC day of the API (YYYY-MM-DD) as the reader writes dates. */
const dayLabel = (date: string) => shortDate.format(new Date(`${date}T00:00:00Z`));

// the chart library is loaded on first use only, in a chunk of its own (not in the app's first load)
let recharts: Promise<typeof import('recharts')> | undefined;
const loadRecharts = () => {
  recharts ??= import('recharts');
  return recharts;
};

/**
 * The daily lines. Each series has its own dash pattern as well as its colour, and the legend and
 * the table below name them; the picture itself is one image to assistive technology (the table
 * carries the numbers), so nothing in it takes the keyboard focus.
 */
function DeliveryChart({ stats }: { stats: EmailStats }) {
  const { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } = use(
    loadRecharts(),
  );
  const data = stats.data.map((d) => ({ ...d, day: dayLabel(d.date) }));
  return (
    <div
      role="img"
      aria-label={`Line chart of sent, delivered, bounced and complained emails per day, ${dayLabel(stats.from)} to ${dayLabel(stats.to)} (UTC). The numbers are in the table below.`}
      // clipped: after the window narrows, the drawing keeps its old width until it is measured again
      style={{ width: '100%', height: 280, marginTop: '1rem', overflow: 'hidden' }}
    >
      <ResponsiveContainer width="100%" height="100%">
        <LineChart data={data} accessibilityLayer={false} margin={{ top: 8, right: 8, bottom: 0, left: -16 }}>
          <CartesianGrid stroke="#d0d7de" strokeDasharray="3 3" />
          <XAxis dataKey="day" tick={{ fill: '#57606a', fontSize: 12 }} minTickGap={16} />
          <YAxis allowDecimals={false} tick={{ fill: '#57606a', fontSize: 12 }} width={56} />
          <Tooltip />
          <Legend itemSorter={null} />
          {SERIES.map((s) => (
            <Line
              key={s.key}
              type="linear"
              dataKey={s.key}
              name={s.label}
              stroke={s.colour}
              strokeWidth={2}
              strokeDasharray={s.dash}
              dot={false}
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}

const LEVEL: Record<NonNullable<Rate['level']>, { word: string; tone: string }> = {
  good: { word: 'Good', tone: 'good' },
  warning: { word: 'Warning', tone: 'warn' },
  critical: { word: 'Critical', tone: 'bad' },
  too_few: { word: 'Too few messages to judge', tone: 'muted' },
};

/**
 * One rate: the figure, its level in words (and colour), a meter, and the thresholds in writing.
 * Over fewer messages than the server judges (`too_few`), the words replace the figure's verdict.
 */
function RateFigure({ name, rate, basis }: { name: string; rate: Rate; basis: string }) {
  const id = useId();
  const level = rate.level ? LEVEL[rate.level] : null;
  const judged = rate.value !== null && rate.level !== 'too_few';
  return (
    <div className="usage">
      <p id={id} className="usage-label">
        {name}
      </p>
      <p className="usage-figure">
        {rate.value === null ? 'No mail sent yet' : judged ? percent.format(rate.value) : null}{' '}
        {level && <span className={`badge badge-${level.tone}`}>{level.word}</span>}
      </p>
      {judged && rate.value !== null && (
        <meter
          aria-labelledby={id}
          style={{ width: '100%' }}
          min={0}
          max={rate.critical_at * 2}
          low={rate.warning_at}
          high={rate.critical_at}
          optimum={0}
          value={Math.min(rate.value, rate.critical_at * 2)}
        />
      )}
      {rate.level === 'too_few' && rate.value !== null && (
        <p className="small">
          {percent.format(rate.value)} of {formatNumber(rate.messages)}{' '}
          {rate.messages === 1 ? 'message' : 'messages'} so far: a rate is judged from{' '}
          {formatNumber(rate.min_messages)} messages, below which one message moves it by 1% or more.
        </p>
      )}
      <p className="muted small">
        Keep it below {percent.format(rate.warning_at)}; {percent.format(rate.critical_at)} or more is
        critical. {basis}
      </p>
    </div>
  );
}

type DayRow = EmailStats['data'][number];

function DayTable({ stats }: { stats: EmailStats }) {
  return (
    <details>
      <summary>Numbers per day</summary>
      <DataTable
        caption="Emails per day (UTC)"
        rows={[...stats.data].reverse()}
        rowKey={(d) => d.date}
        columns={[
          { label: 'Day', cell: (d) => formatDate(`${d.date}T12:00:00Z`) },
          ...SERIES.map((s) => ({ label: s.label, cell: (d: DayRow) => formatNumber(d[s.key]) })),
        ]}
      />
    </details>
  );
}

/** Sent, delivered, bounced and complained mail per day (GET /v1/emails/stats), and the two rates. */
function DeliveryCard() {
  const { project } = useProject();
  const [days, setDays] = useState(DEFAULT_STATS_DAYS);
  const stats = useQuery({ ...emailStatsQuery(project.id, days), placeholderData: keepPreviousData });
  return (
    <section className="card" aria-labelledby="activity-title">
      <div className="page-header">
        <h2 id="activity-title">Delivery per day</h2>
        <SelectField
          label="Period"
          name="days"
          value={String(days)}
          onChange={(v) => setDays(Number(v))}
          options={STATS_PERIODS.map((n) => ({ value: String(n), label: `Last ${n} days` }))}
        />
      </div>
      <ErrorMessage error={stats.error} />
      {stats.isPending && <p role="status">Loading…</p>}
      {stats.data && (
        <>
          <Facts rows={SERIES.map((s) => [s.label, formatNumber(stats.data.totals[s.key])])} />
          <Suspense fallback={<p role="status">Loading the chart…</p>}>
            <DeliveryChart stats={stats.data} />
          </Suspense>
          <div className="grid">
            <RateFigure
              name="Bounce rate"
              rate={stats.data.bounce_rate}
              basis="Bounces of the mail sent. Gmail and Yahoo publish no bounce limit; at 5% Amazon SES reviews a sender."
            />
            <RateFigure
              name="Complaint rate"
              rate={stats.data.complaint_rate}
              basis="Spam complaints of the mail that reached a mailbox. Gmail asks for below 0.1% and never 0.3%; Yahoo for below 0.3%."
            />
          </div>
          <DayTable stats={stats.data} />
        </>
      )}
    </section>
  );
}

/**
 * The project at a glance: plan and usage (GET /v1/limits), what sending needs (GET /v1/me), and
 * the delivery of the last days with the bounce and complaint rates (GET /v1/emails/stats).
 */
export default function Overview() {
  const { project } = useProject();
  const limits = useQuery(limitsQuery(project.id));
  return (
    <>
      <PageHeader title="Overview" />
      <BreakerBanner />
      <div className="grid">
        {limits.isError ? (
          <ErrorMessage error={limits.error} />
        ) : limits.data ? (
          <PlanCard limits={limits.data} />
        ) : null}
        <SendingCard />
      </div>
      <DeliveryCard />
    </>
  );
}

import { useQuery } from '@tanstack/react-query';
import { activityQuery, type Campaign, type CampaignActivity } from '../../api/campaigns.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { formatNumber } from '../../components/format.ts';
import { useProject } from '../../project.tsx';

/**
 * A campaign over time (sent, delivered and bounced per minute, as bars) and the links its readers
 * clicked most. The chart is a drawing for the eye; the same figures are in a table under it.
 */

const HEIGHT = 120;
const time = (iso: string) =>
  new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

function Chart({ activity }: { activity: CampaignActivity }) {
  const { buckets, bucket_seconds } = activity;
  const max = Math.max(1, ...buckets.map((b) => Math.max(b.sent, b.delivered, b.bounced)));
  const width = Math.max(buckets.length * 12, 120);
  const per = bucket_seconds === 60 ? 'minute' : `${bucket_seconds / 60} minutes`;
  const total = buckets.reduce((n, b) => n + b.sent, 0);
  const peak = Math.max(...buckets.map((b) => b.sent));
  return (
    <figure className="activity">
      <svg
        viewBox={`0 0 ${width} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Sent per ${per}: ${formatNumber(total)} in all, at most ${formatNumber(peak)} in one ${per}`}
      >
        {buckets.map((b, i) => {
          const x = (i * width) / buckets.length;
          const w = Math.max(width / buckets.length - 2, 1);
          const h = (n: number) => (n / max) * (HEIGHT - 4);
          return (
            <g key={b.start}>
              <rect className="bar-sent" x={x} y={HEIGHT - h(b.sent)} width={w} height={h(b.sent)} />
              <rect className="bar-bounced" x={x} y={HEIGHT - h(b.bounced)} width={w} height={h(b.bounced)} />
            </g>
          );
        })}
      </svg>
      <figcaption className="muted small">
        <span>{time(buckets[0].start)}</span>
        <span>
          <span className="key key-sent" aria-hidden="true" /> sent ·{' '}
          <span className="key key-bounced" aria-hidden="true" /> bounced, per {per}; highest bar{' '}
          {formatNumber(max)}
        </span>
        <span>{time(buckets[buckets.length - 1].start)}</span>
      </figcaption>
      <details>
        <summary>The figures as a table</summary>
        <table className="table">
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">Sent</th>
              <th scope="col">Delivered</th>
              <th scope="col">Bounced</th>
            </tr>
          </thead>
          <tbody>
            {buckets
              .filter((b) => b.sent + b.delivered + b.bounced > 0)
              .map((b) => (
                <tr key={b.start}>
                  <th scope="row" data-label="From">
                    {time(b.start)}
                  </th>
                  <td data-label="Sent">{formatNumber(b.sent)}</td>
                  <td data-label="Delivered">{formatNumber(b.delivered)}</td>
                  <td data-label="Bounced">{formatNumber(b.bounced)}</td>
                </tr>
              ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

export function CampaignActivityCard({ campaign }: { campaign: Campaign }) {
  const { project } = useProject();
  const activity = useQuery(activityQuery(project.id, campaign.id, campaign.status === 'sending'));
  const a = activity.data;
  return (
    <section aria-labelledby="activity-heading" className="campaign-card">
      <h2 id="activity-heading">Over time</h2>
      <ErrorMessage error={activity.error} />
      {a && a.buckets.length === 0 && <p>Nothing sent yet.</p>}
      {a && a.buckets.length > 0 && <Chart activity={a} />}
      <h3>Top clicked links</h3>
      {a && a.top_links.length === 0 && <p>No clicks by people yet.</p>}
      {a && a.top_links.length > 0 && (
        <table className="table">
          <caption className="visually-hidden">Top clicked links</caption>
          <thead>
            <tr>
              <th scope="col">Link</th>
              <th scope="col">People</th>
              <th scope="col">Clicks</th>
            </tr>
          </thead>
          <tbody>
            {a.top_links.map((l) => (
              <tr key={l.url}>
                <th scope="row" data-label="Link" className="break">
                  {l.url}
                </th>
                <td data-label="People">{formatNumber(l.clicks_unique)}</td>
                <td data-label="Clicks">{formatNumber(l.clicks_total)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

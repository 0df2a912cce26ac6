import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { activityQuery, type Campaign, type CampaignActivity } from '../../api/campaigns.ts';
import { ErrorMessage } from '../../components/Alert.tsx';
import { Bars } from '../../components/Bars.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { formatNumber } from '../../components/format.ts';
import { useProject } from '../../project.tsx';

/**
 * A campaign over time (sent, delivered and bounced per minute, as bars) and the links its readers
 * clicked most. The chart is a drawing for the eye; the same figures are in a table under it.
 */

const time = (iso: string) =>
  new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

function Chart({ activity }: { activity: CampaignActivity }) {
  const { buckets, bucket_seconds } = activity;
  const max = Math.max(1, ...buckets.map((b) => Math.max(b.sent, b.delivered, b.bounced)));
  const per = bucket_seconds === 60 ? 'minute' : `${bucket_seconds / 60} minutes`;
  const total = buckets.reduce((n, b) => n + b.sent, 0);
  const peak = Math.max(...buckets.map((b) => b.sent));
  return (
    <figure className="activity">
      <Bars
        label={`Sent per ${per}: ${formatNumber(total)} in all, at most ${formatNumber(peak)} in one ${per}`}
        bars={buckets.map((b) => ({
          key: b.start,
          // the bounced drawn over the sent, from the foot of the bar
          parts: [
            { className: 'bar-sent', bottom: 0, height: b.sent },
            { className: 'bar-bounced', bottom: 0, height: b.bounced },
          ],
        }))}
      />
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
        <DataTable
          rows={buckets.filter((b) => b.sent + b.delivered + b.bounced > 0)}
          rowKey={(b) => b.start}
          columns={[
            { label: 'From', cell: (b) => time(b.start) },
            { label: 'Sent', cell: (b) => formatNumber(b.sent) },
            { label: 'Delivered', cell: (b) => formatNumber(b.delivered) },
            { label: 'Bounced', cell: (b) => formatNumber(b.bounced) },
          ]}
        />
      </details>
    </figure>
  );
}

/**
 * The campaign over time. Read again whenever the campaign (polled every 2 s while it sends) shows
 * progress or a new status: a small campaign is sent between two of the chart's own 5 s refreshes,
 * which stop once it is sent, and the chart would otherwise say "Nothing sent yet" until a reload.
 */
export function CampaignActivityCard({ campaign }: { campaign: Campaign }) {
  const { project } = useProject();
  const queryClient = useQueryClient();
  const activity = useQuery(activityQuery(project.id, campaign.id, campaign.status === 'sending'));
  const s = campaign.stats;
  const progress = `${campaign.status}/${s?.sent ?? 0}/${s?.delivered ?? 0}/${s?.bounced ?? 0}`;
  const seen = useRef(progress);
  useEffect(() => {
    if (seen.current === progress) return;
    seen.current = progress;
    void queryClient.invalidateQueries({
      queryKey: ['project', project.id, 'campaign', campaign.id, 'activity'],
    });
  }, [progress, queryClient, project.id, campaign.id]);
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
        <DataTable
          caption="Top clicked links"
          rows={a.top_links}
          rowKey={(l) => l.url}
          columns={[
            { label: 'Link', cell: (l) => l.url, className: 'break' },
            { label: 'People', cell: (l) => formatNumber(l.clicks_unique) },
            { label: 'Clicks', cell: (l) => formatNumber(l.clicks_total) },
          ]}
        />
      )}
    </section>
  );
}

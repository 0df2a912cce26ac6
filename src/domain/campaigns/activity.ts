import { sql } from 'kysely';
import type { DomainContext } from '../core/context.ts';
import { findCampaign } from './campaigns.ts';
import { humanEngagement } from './stats.ts';
import { countedPart } from './stats-cache.ts';

/**
 * GET /campaigns/{id}/activity: how a campaign went out over time, and where its readers clicked.
 *
 * - Buckets of one minute while the campaign spans at most `MAX_BUCKETS` minutes, wider (whole
 *   minutes) after that, so a throttled campaign over days still draws as at most that many bars.
 *   `sent` counts messages by when the next hop accepted them (`sent_at`); `delivered` and `bounced`
 *   by when the message reached that status (its `updated_at`; a complaint counts as delivered).
 *   Buckets with nothing in them are included, so the series is continuous.
 * - The top links: human clicks (link scanners are not counted), by URL, as people and as clicks.
 *
 * Both read the campaign's emails through `campaign_recipients` and the engagement index, as the
 * stats do (domain/campaigns/stats.ts): no index on `emails` is needed for it.
 */

export const MAX_BUCKETS = 120;
const TOP_LINKS = 10;

interface BucketRow {
  origin: Date;
  secs: number;
  at: Date;
  sent: number;
  delivered: number;
  bounced: number;
}

export async function campaignActivity(ctx: DomainContext, projectId: string, id: string) {
  const campaign = await findCampaign(ctx, projectId, id);
  const { value, asOf } = await countedPart(ctx, campaign, 'activity', () => countActivity(ctx, campaign.id));
  return { ...value, as_of: asOf?.toISOString() ?? null };
}

/** The campaign's sending over time and its top links, counted now. */
export async function countActivity(ctx: Pick<DomainContext, 'db'>, campaignId: string) {
  const campaign = { id: campaignId };
  // one pass over the campaign's emails: each gives up to three moments (sent, delivered, bounced);
  // the span of those moments sets the bucket width (whole minutes, at most MAX_BUCKETS buckets)
  const { rows } = await sql<BucketRow>`
    with v as materialized (
      select v.kind, v.at
        from campaign_recipients r
        join emails e on e.id = r.email_id
       cross join lateral (values
               ('s', e.sent_at),
               ('d', case when e.status in ('delivered', 'complained') then e.updated_at end),
               ('b', case when e.status = 'bounced' then e.updated_at end)) as v(kind, at)
       where r.campaign_id = ${campaign.id} and v.at is not null
    ), w as (
      select origin, (ceil((floor(extract(epoch from last - origin) / 60) + 1) / ${MAX_BUCKETS}::numeric) * 60)::int as secs
        from (select date_trunc('minute', min(at)) as origin, max(at) as last from v) span
       where origin is not null
    )
    select w.origin, w.secs, date_bin(make_interval(secs => w.secs), v.at, w.origin) as at,
           count(*) filter (where v.kind = 's')::int as sent,
           count(*) filter (where v.kind = 'd')::int as delivered,
           count(*) filter (where v.kind = 'b')::int as bounced
      from v cross join w
     group by 1, 2, 3 order by 3`.execute(ctx.db);
  const top_links = await topLinks(ctx, campaign.id);
  if (rows.length === 0)
    return { object: 'campaign_activity' as const, bucket_seconds: 60, buckets: [], top_links };
  const { origin, secs } = rows[0];
  const byStart = new Map(rows.map((r) => [r.at.getTime(), r]));
  const count = Math.round((rows[rows.length - 1].at.getTime() - origin.getTime()) / (secs * 1000)) + 1;
  const buckets = Array.from({ length: count }, (_, i) => {
    const at = origin.getTime() + i * secs * 1000;
    const row = byStart.get(at);
    return {
      start: new Date(at).toISOString(),
      sent: row?.sent ?? 0,
      delivered: row?.delivered ?? 0,
      bounced: row?.bounced ?? 0,
    };
  });
  return { object: 'campaign_activity' as const, bucket_seconds: secs, buckets, top_links };
}

async function topLinks(ctx: Pick<DomainContext, 'db'>, campaignId: string) {
  const { rows } = await sql<{ url: string; people: number; clicks: number }>`
    select ev.detail ->> 'url' as url, count(distinct ev.email_id)::int as people, count(*)::int as clicks
      from campaign_recipients r
      join email_events ev on ev.email_id = r.email_id and ${humanEngagement('ev')}
     where r.campaign_id = ${campaignId} and ev.type = 'clicked' and ev.detail ->> 'url' is not null
     group by 1 order by 2 desc, 3 desc, 1 limit ${TOP_LINKS}`.execute(ctx.db);
  return rows.map((r) => ({ url: r.url, clicks_unique: r.people, clicks_total: r.clicks }));
}

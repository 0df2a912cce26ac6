import type { Selectable } from 'kysely';
import { addJobs } from '../../db/enqueue.ts';
import type { CampaignsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';

type CampaignRow = Selectable<CampaignsTable>;

/**
 * A large campaign's page, once it is sent, is counted at most every FRESH_MS rather than on every
 * read: its stats and its activity each read every recipient's email (a few hundred ms for 100,000
 * on a small machine). A read within FRESH_MS of the last count gets that count; a later one gets
 * it too and queues a new count (one job per campaign, `campaign-stats:{id}`), so no read waits for
 * one; the first read, or the count the finish job queues, writes it. Below CACHE_FROM_RECIPIENTS
 * recipients, and while a campaign is under way, every read counts: the numbers are the rows' now.
 */
export const CACHE_FROM_RECIPIENTS = 10_000;
export const FRESH_MS = 15_000;
const SETTLED = new Set(['sent', 'cancelled', 'failed']);

type Part = 'stats' | 'activity';

/** Whether a campaign's page is counted now or read from its last count. */
export function countedAhead(row: Pick<CampaignRow, 'status' | 'recipient_count'>): boolean {
  return SETTLED.has(row.status) && (row.recipient_count ?? 0) >= CACHE_FROM_RECIPIENTS;
}

/** The job that counts a campaign's page again (deduplicated by its key while it waits). */
export function statsRefreshJob(campaignId: string) {
  return {
    task: 'campaign_stats_refresh' as const,
    payload: { campaign_id: campaignId },
    jobKey: `campaign-stats:${campaignId}`,
  };
}

/**
 * One part of the campaign's page: counted now (`asOf` null), or its last count with when it was
 * made. A count older than FRESH_MS is still served, and a new one is queued.
 */
export async function countedPart<T>(
  ctx: DomainContext,
  row: Pick<CampaignRow, 'id' | 'status' | 'recipient_count'>,
  part: Part,
  count: () => Promise<T>,
): Promise<{ value: T; asOf: Date | null }> {
  if (!countedAhead(row)) return { value: await count(), asOf: null };
  const cached = await ctx.db
    .selectFrom('campaign_stats_cache')
    .select([part, 'computed_at'])
    .where('campaign_id', '=', row.id)
    .executeTakeFirst();
  const value = cached?.[part];
  if (cached && value !== null && value !== undefined) {
    if (Date.now() - cached.computed_at.getTime() > FRESH_MS)
      await addJobs([statsRefreshJob(row.id)]).execute(ctx.db);
    return { value: value as T, asOf: cached.computed_at };
  }
  const counted = await count();
  // the row's own time, whichever part wrote it first: every read of this count names one moment
  const kept = await ctx.db
    .insertInto('campaign_stats_cache')
    .values({ campaign_id: row.id, [part]: JSON.stringify(counted), computed_at: new Date() })
    .onConflict((oc) => oc.column('campaign_id').doUpdateSet({ [part]: JSON.stringify(counted) }))
    .returning('computed_at')
    .executeTakeFirstOrThrow();
  return { value: counted, asOf: kept.computed_at };
}

/** Counts both parts again and keeps them (the refresh job): what a stale read queued. */
export async function recountCampaignPage(
  ctx: DomainContext,
  campaignId: string,
  parts: { stats: () => Promise<unknown>; activity: () => Promise<unknown> },
): Promise<void> {
  const computedAt = new Date();
  const [stats, activity] = await Promise.all([parts.stats(), parts.activity()]);
  const values = {
    stats: JSON.stringify(stats),
    activity: JSON.stringify(activity),
    computed_at: computedAt,
  };
  await ctx.db
    .insertInto('campaign_stats_cache')
    .values({ campaign_id: campaignId, ...values })
    .onConflict((oc) => oc.column('campaign_id').doUpdateSet(values))
    .execute();
}

import type { Task } from 'graphile-worker';
import { countActivity } from '../domain/campaigns/activity.ts';
import { campaignPageStats } from '../domain/campaigns/campaigns.ts';
import { countedAhead, recountCampaignPage } from '../domain/campaigns/stats-cache.ts';
import type { DomainContext } from '../domain/core/context.ts';

/**
 * Counts a large sent campaign's page again (domain/campaigns/stats-cache.ts): queued by the finish
 * job and by a read that found the last count stale, with the key `campaign-stats:{id}`. A campaign
 * gone, or no longer counted ahead, is left alone.
 */
export function campaignStatsRefreshTask(ctx: DomainContext): Task<'campaign_stats_refresh'> {
  return async (payload) => {
    const row = await ctx.db
      .selectFrom('campaigns')
      .selectAll()
      .where('id', '=', payload.campaign_id)
      .executeTakeFirst();
    if (!row || !countedAhead(row)) return;
    await recountCampaignPage(ctx, row.id, {
      stats: () => campaignPageStats(ctx, row),
      activity: () => countActivity(ctx, row.id),
    });
  };
}

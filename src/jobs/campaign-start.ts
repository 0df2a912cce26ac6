import type { Task } from 'graphile-worker';
import { startScheduledCampaign } from '../domain/campaigns/actions.ts';
import type { DomainContext } from '../domain/core/context.ts';

/**
 * Starts a scheduled campaign at its time, as POST /campaigns/{id}/send would (see
 * domain/campaigns/actions.ts `startScheduledCampaign`): a campaign no longer scheduled is left
 * alone, one whose checks fail becomes `failed`. Enqueued with the key `campaign-start:{id}`.
 */
export function campaignStartTask(ctx: DomainContext): Task<'campaign_start'> {
  return async (payload) => {
    const id = payload.campaign_id;
    if (id) await startScheduledCampaign(ctx, id);
  };
}

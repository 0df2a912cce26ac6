import type { Task } from 'graphile-worker';
import { pickAbWinner } from '../domain/campaigns/ab.ts';
import type { DomainContext } from '../domain/core/context.ts';

/**
 * Picks the winner of an A/B campaign when its wait is over and lets the writer go on with the
 * rest (see domain/campaigns/ab.ts `pickAbWinner`). Enqueued with the key `campaign-ab:{id}` by
 * the writer once the last test email is written; a campaign no longer under way, one whose
 * winner is picked already, or one the user picks for, is left alone.
 */
export function campaignAbWinnerTask(ctx: DomainContext): Task<'campaign_ab_winner'> {
  return async (payload) => {
    const id = payload.campaign_id;
    if (id) await pickAbWinner(ctx, id);
  };
}

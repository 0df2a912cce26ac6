import { finishCampaign, sendCampaignBatch } from '../domain/campaigns/send-batch.ts';
import type { DomainContext } from '../domain/core/context.ts';

const campaignOf = (payload: unknown) => (payload as { campaign_id?: string }).campaign_id;

/** Writes one batch of a sending campaign's emails and enqueues what follows (see domain/campaigns/send-batch.ts). */
export function campaignSendTask(ctx: DomainContext) {
  return async (payload: unknown) => {
    const id = campaignOf(payload);
    if (id) await sendCampaignBatch(ctx, id);
  };
}

/** Marks a campaign `sent` once every recipient's email is final, or looks again shortly. */
export function campaignFinishTask(ctx: DomainContext) {
  return async (payload: unknown) => {
    const id = campaignOf(payload);
    if (id) await finishCampaign(ctx, id);
  };
}

import type { Task } from 'graphile-worker';
import { finishCampaign, sendCampaignBatch } from '../domain/campaigns/send-batch.ts';
import type { DomainContext } from '../domain/core/context.ts';
import type { CampaignPayload } from './payloads.ts';

const campaignOf = (payload: CampaignPayload) => payload.campaign_id;

/** Writes one batch of a sending campaign's emails and enqueues what follows (see domain/campaigns/send-batch.ts). */
export function campaignSendTask(ctx: DomainContext): Task<'campaign_send'> {
  return async (payload) => {
    const id = campaignOf(payload);
    if (id) await sendCampaignBatch(ctx, id);
  };
}

/** Marks a campaign `sent` once every recipient's email is final, or looks again shortly. */
export function campaignFinishTask(ctx: DomainContext): Task<'campaign_finish'> {
  return async (payload) => {
    const id = campaignOf(payload);
    if (id) await finishCampaign(ctx, id);
  };
}

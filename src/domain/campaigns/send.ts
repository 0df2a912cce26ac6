import { sql } from 'kysely';
import { enqueue } from '../../db/enqueue.ts';
import type { CampaignStatus } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, SendRefusedError, ValidationError } from '../core/errors.ts';
import { checkFromAddress } from '../emails/accept.ts';
import { checkSendingLimits } from '../emails/usage.ts';
import { type ProjectFacts, sendBlockers } from '../plans/project-facts.ts';
import { countAudience, snapshotAudience } from './audience.ts';
import { findCampaign, presentCampaign } from './campaigns.ts';
import { campaignContent } from './content.ts';

/** The statuses a campaign may start (or resume) sending from. */
const STARTABLE: CampaignStatus[] = ['draft', 'scheduled', 'paused'];

/** The job that writes a campaign's emails, one per campaign at a time (its job key). */
export function campaignJob(campaignId: string, runAt?: Date) {
  return {
    task: 'campaign_send',
    payload: { campaign_id: campaignId },
    jobKey: `campaign:${campaignId}`,
    runAt,
  };
}

/**
 * POST /campaigns/{id}/send: refuses before any message what would stop the campaign halfway
 * (account and footer blockers, a `from` no longer verified, an empty audience, the plan's monthly
 * allowance for the whole audience), then in ONE transaction snapshots the audience, moves the
 * campaign to `sending` and enqueues its `campaign_send` job. 409 unless draft, scheduled or paused.
 */
export async function sendCampaign(ctx: DomainContext, facts: ProjectFacts, id: string) {
  const campaign = await findCampaign(ctx, facts.id, id);
  const blockers = sendBlockers(facts, 'marketing');
  if (blockers.length > 0)
    throw new SendRefusedError(
      blockers[0].code,
      `Campaign "${campaign.name}" cannot be sent: ${blockers.map((b) => b.message).join('; ')}`,
    );
  if (!STARTABLE.includes(campaign.status))
    throw new ConflictError(`Campaign "${campaign.name}" is ${campaign.status}: it cannot be sent again`);
  // the template must still be published and the sender still verified
  const content = await campaignContent(ctx, campaign);
  const onShared = checkFromAddress(ctx, facts, content.fromAddress);
  const count = await countAudience(ctx, campaign);
  if (count === 0) throw emptyAudience(campaign.name);
  await checkSendingLimits(ctx, facts, count, onShared ? count : 0);

  const row = await ctx.db.transaction().execute(async (tx) => {
    await sql`set local work_mem = '64MB'; set local max_parallel_workers_per_gather = 0`.execute(tx);
    // the status is checked again in the write: two sends at once start the campaign once
    const started = await tx
      .updateTable('campaigns')
      .set({
        status: 'sending',
        started_at: sql`coalesce(started_at, now())`,
        // a campaign without a version sends the one that is latest now, to every recipient
        template_version: sql`coalesce(template_version,
          (select t.latest_version from templates t where t.id = campaigns.template_id))`,
        updated_at: new Date(),
      })
      .where('id', '=', campaign.id)
      .where('status', 'in', STARTABLE)
      .returning('id')
      .executeTakeFirst();
    if (!started) throw new ConflictError(`Campaign "${campaign.name}" is already being sent`);
    await snapshotAudience(tx, campaign);
    const snapshot = await tx
      .selectFrom('campaigns')
      .selectAll()
      .where('id', '=', campaign.id)
      .executeTakeFirstOrThrow();
    if (!snapshot.recipient_count) throw emptyAudience(campaign.name);
    await enqueue(tx, [campaignJob(campaign.id)]);
    return snapshot;
  });
  return presentCampaign(row);
}

function emptyAudience(name: string) {
  return new ValidationError(
    `Campaign "${name}" has no recipients: its lists and segments hold no subscribed, unsuppressed contact`,
  );
}

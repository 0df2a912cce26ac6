import { sql } from 'kysely';
import { BULK_PRIORITY, enqueue, type JobSpec } from '../../db/enqueue.ts';
import type { CampaignStatus } from '../../db/schema.ts';
import { domainOf } from '../../mail/address.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, ValidationError } from '../core/errors.ts';
import { checkSend, checkStream } from '../emails/send-checks.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { type GateOverride, passGate } from '../reputation/gate-pass.ts';
import { passWiderStops } from '../shaping/breaker-write.ts';
import { activePlan, rankRecipients } from '../shaping/warmup.ts';
import { countAudience, snapshotAudience } from './audience.ts';
import { type CampaignRow, campaignView, findCampaign } from './campaigns.ts';
import { type CampaignContent, campaignContent } from './content.ts';

/** The statuses a campaign may start sending from (a paused one goes on with /resume instead). */
export const STARTABLE: CampaignStatus[] = ['draft', 'scheduled'];

/** The job that writes a campaign's emails, one per campaign at a time (its job key). */
export function campaignJob(campaignId: string, runAt?: Date): JobSpec {
  return {
    task: 'campaign_send',
    payload: { campaign_id: campaignId },
    jobKey: `campaign:${campaignId}`,
    runAt,
    priority: BULK_PRIORITY,
  };
}

/** The job key of a scheduled campaign's start: one per campaign, so rescheduling replaces it. */
export function startJobKey(campaignId: string): string {
  return `campaign-start:${campaignId}`;
}

/** The job that starts a scheduled campaign at its time (see actions.ts `startScheduledCampaign`). */
export function startJob(campaignId: string, runAt: Date): JobSpec {
  return {
    task: 'campaign_start',
    payload: { campaign_id: campaignId },
    jobKey: startJobKey(campaignId),
    runAt,
    priority: BULK_PRIORITY,
  };
}

/** Refuses (400) a marketing send while the account or the footer blocks it, naming the fix. */
export function checkSendBlockers(facts: ProjectFacts, campaign: Pick<CampaignRow, 'name'>): void {
  checkStream(facts, 'marketing', cannotSend(campaign));
}

/**
 * The send checks for `count` of the campaign's messages as they would go out now (send-checks.ts):
 * account and footer first (400), then the content (the template still published) and its `from`
 * still on a verified domain (400), then the count, read only once those pass, and the plan's
 * allowance for it. Returns the content.
 */
export async function checkCampaignSend(
  ctx: DomainContext,
  facts: ProjectFacts,
  campaign: CampaignRow,
  count: number | (() => Promise<number>),
): Promise<CampaignContent> {
  checkSendBlockers(facts, campaign);
  const content = await campaignContent(ctx, campaign);
  await checkSend(ctx, facts, {
    stream: 'marketing',
    who: cannotSend(campaign),
    from: content.fromAddress,
    count,
  });
  return content;
}

/**
 * What /send, /schedule and the scheduled start all check before a campaign may start, refusing
 * before any message what would stop it halfway: account and footer blockers (400), content and a
 * `from` no longer verified (400), an empty audience (400), and the plan's monthly allowance for
 * the whole audience (402).
 */
export async function checkCampaignStart(
  ctx: DomainContext,
  facts: ProjectFacts,
  campaign: CampaignRow,
  override?: GateOverride,
): Promise<CampaignContent> {
  const content = await checkCampaignSend(ctx, facts, campaign, async () => {
    const count = await countAudience(ctx, campaign);
    if (count === 0) throw emptyAudience(campaign.name, campaign.topic_id);
    return count;
  });
  // its domain or project stopped by the circuit breaker: nothing starts until an admin resumes it
  await passWiderStops(ctx.db, facts.id, content.fromAddress, null, null);
  await passGate(
    ctx,
    facts.id,
    [{ projectId: facts.id, stream: 'marketing', from: campaignSender(campaign, content) }],
    { scope: 'campaign', id: campaign.id, refusal: cannotSend(campaign) },
    override,
  );
  return content;
}

/** The From mailbox of a campaign's messages (its name, the content's address). */
export const campaignSender = (campaign: Pick<CampaignRow, 'from_name'>, content: CampaignContent) => ({
  name: campaign.from_name ?? '',
  address: content.fromAddress,
});

const cannotSend = (campaign: Pick<CampaignRow, 'name'>) => `Campaign "${campaign.name}" cannot be sent`;

/**
 * Starts a checked campaign in ONE transaction: moves it from one of `from` to `sending` (the
 * status is checked again in the write: two starts at once start it once), snapshots the audience,
 * enqueues its `campaign_send` job and drops a pending scheduled start. 409 when the status moved.
 */
export async function startCampaign(
  ctx: Pick<DomainContext, 'db'>,
  campaign: CampaignRow,
  from: CampaignStatus[],
  fromAddress: string,
): Promise<CampaignRow> {
  return ctx.db.transaction().execute(async (tx) => {
    await sql`set local work_mem = '64MB'; set local max_parallel_workers_per_gather = 0`.execute(tx);
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
      .where('status', 'in', from)
      .returning('id')
      .executeTakeFirst();
    if (!started) throw new ConflictError(`Campaign "${campaign.name}" is already being sent`);
    await snapshotAudience(tx, campaign);
    // a domain warming up sends to the engaged first (reputation/warmup.ts)
    if (await activePlan(tx, campaign.project_id, domainOf(fromAddress)))
      await rankRecipients(tx, campaign.id, campaign.project_id);
    const snapshot = await tx
      .selectFrom('campaigns')
      .selectAll()
      .where('id', '=', campaign.id)
      .executeTakeFirstOrThrow();
    if (!snapshot.recipient_count) throw emptyAudience(campaign.name, campaign.topic_id);
    await enqueue(tx, [campaignJob(campaign.id)]);
    // a campaign sent before its time is not started again when the time comes
    await sql`select graphile_worker.remove_job(${startJobKey(campaign.id)})`.execute(tx);
    return snapshot;
  });
}

/**
 * POST /campaigns/{id}/send: the start checks (checkCampaignStart), then the snapshot, the status
 * `sending` and the `campaign_send` job in one transaction. 409 unless draft or scheduled; a paused
 * campaign is resumed with /resume, which keeps the audience it was started with.
 */
export async function sendCampaign(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  override?: GateOverride,
) {
  const campaign = await findCampaign(ctx, facts.id, id);
  checkStartable(campaign);
  const content = await checkCampaignStart(ctx, facts, campaign, override);
  return campaignView(ctx, await startCampaign(ctx, campaign, STARTABLE, content.fromAddress));
}

/** 409 unless the campaign is a draft or scheduled: a paused one goes on with /resume, the others are done. */
export function checkStartable(campaign: Pick<CampaignRow, 'id' | 'name' | 'status'>): void {
  if (campaign.status === 'paused')
    throw new ConflictError(
      `Campaign "${campaign.name}" is paused: resume it with POST /v1/campaigns/${campaign.id}/resume`,
    );
  if (!STARTABLE.includes(campaign.status))
    throw new ConflictError(`Campaign "${campaign.name}" is ${campaign.status}: it cannot be sent again`);
}

/** The refusal of a start whose audience holds nobody. */
export function emptyAudience(name: string, topicId: string | null = null) {
  return new ValidationError(
    `Campaign "${name}" has no recipients: its lists and segments hold no subscribed, unsuppressed contact${topicId ? ' subscribed to its topic (a deleted topic has no subscribers)' : ''}`,
  );
}

import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { addJobs, BULK_PRIORITY, enqueue, type JobSpec } from '../../db/enqueue.ts';
import type { AbTestColumn, CampaignStatus } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, ValidationError } from '../core/errors.ts';
import { type CampaignRow, campaignView, findCampaign } from './campaigns.ts';
import { type CampaignContent, campaignContent } from './content.ts';
import { campaignJob } from './send.ts';
import { type CampaignCounts, type CampaignStatsResult, campaignStats } from './stats.ts';

/**
 * A/B tests (plan feature `ab_testing`). The snapshot gives a random `test_share` of the audience
 * a variant, split evenly (audience.ts); the writer (send-batch.ts) writes those recipients first,
 * each with its variant's content; once all are written the wait starts (`ab_winner_due_at`) and
 * the `campaign_ab_winner` job is enqueued for its end. The job picks the winner by its rule, or
 * the user picks it (`winner_by: manual`, or earlier than the rule would); `winner_variant` is then
 * set and the writer goes on with the rest, who get the winner's content. A pure split (test share
 * 100) has no winner phase. Every email is tagged `campaign` (its id) and `variation` (its
 * variant's name).
 */

/** The statuses in which a winner may be picked: the campaign is under way. */
const UNDER_WAY: CampaignStatus[] = ['sending', 'paused'];

/** The job key of a campaign's winner pick: one per campaign. */
export function winnerJobKey(campaignId: string): string {
  return `campaign-ab:${campaignId}`;
}

/** The job that picks the winner of an A/B campaign when its wait is over. */
export function winnerJob(campaignId: string, runAt: Date): JobSpec {
  return {
    task: 'campaign_ab_winner',
    payload: { campaign_id: campaignId },
    jobKey: winnerJobKey(campaignId),
    runAt,
    priority: BULK_PRIORITY,
  };
}

/** The wait between the last test email written and the winner, in seconds. */
export function waitSeconds(ab: AbTestColumn): number {
  if (ab.winner_by === 'manual') return 0;
  return ab.wait_seconds ?? (ab.wait_minutes ?? 0) * 60;
}

/**
 * The A/B test while the writer may write only its test recipients (a test with a winner phase
 * whose winner is not picked yet), else null.
 */
export function testPhaseOf(c: Pick<CampaignRow, 'ab_test' | 'winner_variant'>): AbTestColumn | null {
  return c.ab_test !== null && c.ab_test.test_share < 100 && c.winner_variant === null ? c.ab_test : null;
}

/**
 * Called by the writer, in its transaction, once no test recipient is pending: the wait starts
 * (kept if it had already started, so a repeat changes nothing) and, unless the user picks the
 * winner, its job is enqueued for the end of the wait.
 */
export async function startWinnerWait(tx: Tx, campaignId: string, ab: AbTestColumn): Promise<void> {
  const row = await tx
    .updateTable('campaigns')
    .set({
      ab_winner_due_at: sql`coalesce(ab_winner_due_at, now() + make_interval(secs => ${waitSeconds(ab)}))`,
    })
    .where('id', '=', campaignId)
    .returning('ab_winner_due_at')
    .executeTakeFirstOrThrow();
  if (ab.winner_by !== 'manual' && row.ab_winner_due_at)
    await enqueue(tx, [winnerJob(campaignId, row.ab_winner_due_at)]);
}

/**
 * What each picked recipient's email is made from: its variant's content (a test recipient), the
 * winner's (the rest of an A/B campaign), or the campaign's own; resolved once per batch and kind.
 */
export async function recipientContents(
  ctx: DomainContext,
  campaign: CampaignRow,
  variants: (number | null)[],
): Promise<(variant: number | null) => CampaignContent> {
  const contents = new Map<number | null, CampaignContent>();
  for (const v of new Set(variants.map((v) => v ?? campaign.winner_variant)))
    contents.set(v, await campaignContent(ctx, campaign, { variant: campaign.ab_test ? v : null }));
  return (variant) => contents.get(variant ?? campaign.winner_variant) as CampaignContent;
}

/** The name of the A/B variation a message is sent with (its test variant, else the winner), if any. */
export function variationOf(campaign: CampaignRow, variant: number | null): string | null {
  const sent = variant ?? campaign.winner_variant;
  return campaign.ab_test && sent !== null ? campaign.ab_test.variants[sent].name : null;
}

/** One variant's score under the rule: a rate per test recipient, as a fraction to compare exactly. */
function score(rule: AbTestColumn['winner_by'], counts: CampaignCounts, currency: string | null) {
  const value =
    rule === 'opens'
      ? counts.opens.unique
      : rule === 'clicks'
        ? counts.clicks.unique
        : (counts.revenue.find((r) => r.currency === currency)?.amount ?? 0);
  return { value, of: Math.max(counts.recipients, 1) };
}

/**
 * The winner by the rule: the highest unique human opens or clicks, or attributed revenue, per
 * test recipient (the split is even, so this is the count when the groups are the same size);
 * revenue is compared in the currency most of the test's attributed events are in. Ties go to
 * the lowest index.
 */
export function bestVariant(ab: AbTestColumn, result: CampaignStatsResult | undefined): number {
  const counts = ab.variants.map((_, i) => result?.byVariant.get(i));
  const currencies = new Map<string, number>();
  for (const c of counts)
    for (const r of c?.revenue ?? [])
      currencies.set(r.currency, (currencies.get(r.currency) ?? 0) + r.events);
  const currency = [...currencies].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0] ?? null;
  let best = 0;
  let bestScore = { value: -1, of: 1 };
  counts.forEach((c, i) => {
    if (!c) return;
    const s = score(ab.winner_by, c, currency);
    if (s.value * bestScore.of > bestScore.value * s.of) {
      best = i;
      bestScore = s;
    }
  });
  return best;
}

/**
 * Records the winner, if none is yet and the campaign is under way (two picks at once: the first
 * wins), and, for a sending campaign, enqueues the writer for the rest (a paused one goes on at
 * /resume). Drops a pending winner job. Null when nothing changed.
 */
async function setWinner(ctx: Pick<DomainContext, 'db'>, campaignId: string, variant: number) {
  return ctx.db.transaction().execute(async (tx) => {
    const row = await tx
      .updateTable('campaigns')
      .set({ winner_variant: variant, updated_at: new Date() })
      .where('id', '=', campaignId)
      .where('winner_variant', 'is', null)
      .where('status', 'in', UNDER_WAY)
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    if (row.status === 'sending') await enqueue(tx, [campaignJob(campaignId)]);
    return row;
  });
}

/**
 * The `campaign_ab_winner` job: once the wait is over, picks the winner by the rule and lets the
 * writer go on with the rest. Nothing happens to a campaign not under way, whose winner is picked
 * already, or that waits for the user's pick; a job that runs early is put back to its time.
 */
export async function pickAbWinner(
  ctx: Pick<DomainContext, 'db'>,
  campaignId: string,
): Promise<'picked' | 'not_due' | 'skipped'> {
  const found = await ctx.db
    .selectFrom('campaigns')
    .selectAll()
    // in the database's clock, which also set the due time
    .select(sql<boolean>`ab_winner_due_at <= now() + interval '1 second'`.as('due'))
    .where('id', '=', campaignId)
    .executeTakeFirst();
  const ab = found?.ab_test;
  if (!found || !ab || found.winner_variant !== null || !UNDER_WAY.includes(found.status)) return 'skipped';
  if (ab.winner_by === 'manual' || found.ab_winner_due_at === null) return 'skipped';
  if (!found.due) {
    await addJobs([winnerJob(found.id, found.ab_winner_due_at)]).execute(ctx.db);
    return 'not_due';
  }
  const stats = await campaignStats(ctx.db, [found.id]);
  const winner = bestVariant(ab, stats.get(found.id));
  return (await setWinner(ctx, found.id, winner)) ? 'picked' : 'skipped';
}

/**
 * POST /campaigns/{id}/ab/winner: the user picks the winner (the way of `winner_by: manual`, or an
 * early end of any test) and the rest of the audience gets it. 409 unless the campaign is an A/B
 * campaign with a winner phase, under way and without a winner; 400 for an index it does not have.
 */
export async function chooseAbWinner(ctx: DomainContext, projectId: string, id: string, variant: number) {
  const campaign = await findCampaign(ctx, projectId, id);
  const refusal = pickRefusal(campaign);
  if (refusal) throw refusal;
  const count = campaign.ab_test?.variants.length ?? 0;
  if (!Number.isInteger(variant) || variant < 0 || variant >= count)
    throw new ValidationError(
      `\`variant\` must be the index of one of the campaign's variants: 0 to ${count - 1}`,
    );
  const row = await setWinner(ctx, campaign.id, variant);
  if (!row)
    throw pickRefusal(await findCampaign(ctx, projectId, id)) ?? new ConflictError('The winner is picked');
  await sql`select graphile_worker.remove_job(${winnerJobKey(campaign.id)})`.execute(ctx.db);
  return campaignView(ctx, row);
}

/** Why a winner cannot be picked for the campaign now (409), or null. */
function pickRefusal(c: CampaignRow): ConflictError | null {
  const name = `Campaign "${c.name}"`;
  if (!c.ab_test) return new ConflictError(`${name} has no A/B test`);
  if (c.ab_test.test_share === 100)
    return new ConflictError(
      `${name} sends a variant to every recipient (test_share 100): there is no winner to pick`,
    );
  if (c.winner_variant !== null)
    return new ConflictError(
      `${name} already has its winner: variant ${c.winner_variant} (${c.ab_test.variants[c.winner_variant]?.name})`,
    );
  if (!UNDER_WAY.includes(c.status))
    return new ConflictError(
      `${name} is ${c.status}: a winner is picked while the campaign is sending or paused`,
    );
  return null;
}

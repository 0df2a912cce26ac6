import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';
import { addJobs, BULK_PRIORITY, type JobSpec } from '../../db/enqueue.ts';
import { routeView } from '../../delivery/routes/view.ts';
import { domainOf } from '../../mail/address.ts';
import { msUntilNextDay } from '../core/clock.ts';
import type { DomainContext } from '../core/context.ts';
import { emailRow, mailboxOf, renderedBody } from '../emails/email-row.ts';
import { applyWrite, type EmailRowInput, queuedWrite } from '../emails/write.ts';
import { sharedDefaultFrom } from '../plans/project-facts.ts';
import { campaignStepMs, writerPace } from '../shaping/throttle.ts';
import { activePlan, lockToday, reserve } from '../shaping/warmup.ts';
import type { TemplateContact } from '../templates/render.ts';
import { renderEach } from '../templates/render-pool.ts';
import { recipientContents, startWinnerWait, testPhaseOf, variationOf } from './ab.ts';
import type { CampaignRow } from './campaigns.ts';
import { type CampaignContent, campaignContent, templateData } from './content.ts';
import { CAMPAIGN_BATCH } from './hold.ts';
import { dueNow, hasTimedPending, holdForQuietHours, nextWaiting, realTimeOf } from './local-send.ts';
import { campaignJob } from './send.ts';
import { countedAhead, statsRefreshJob } from './stats-cache.ts';

/** How often the finish check looks again while messages are still on their way. */
const FINISH_POLL_MS = 2_000;
/** Email statuses after which nothing more happens to a message. */
const FINAL = ['sent', 'delivered', 'bounced', 'complained', 'failed', 'suppressed', 'cancelled'];

type Picked = TemplateContact & { contact_id: string; found: boolean; variant: number | null };

export function finishJob(campaignId: string, delayMs = FINISH_POLL_MS): JobSpec {
  return {
    task: 'campaign_finish',
    payload: { campaign_id: campaignId },
    jobKey: `campaign-finish:${campaignId}`,
    runAt: new Date(Date.now() + delayMs),
    priority: BULK_PRIORITY,
  };
}

/**
 * One batch of a sending campaign, in ONE transaction: takes up to CAMPAIGN_BATCH pending (fewer
 * when the campaign is throttled: about five seconds of its rate, see emails/throttle.ts)
 * recipients (`FOR UPDATE SKIP LOCKED`), renders each one's subject (and inline HTML; a template
 * email keeps its version and data and is rendered again when it leaves), writes their emails, the
 * `queued` events, the usage and the delivery jobs in one statement, marks the recipients `queued`
 * with their email id, and enqueues what comes next: this job again while recipients remain, else
 * the finish check. The recipient's status is the guard: a re-run after a crash finds it `queued`
 * (committed with its email) or still `pending` (nothing was written), never a second email.
 * A paused or cancelled campaign stops here. An A/B campaign writes its test recipients first,
 * each with its variant's content, then starts the wait for its winner (ab.ts) instead of the
 * finish check; once the winner is picked, the rest get its content. Returns how many recipients
 * the batch took.
 */
export async function sendCampaignBatch(ctx: DomainContext, campaignId: string): Promise<number> {
  const campaign = await ctx.db
    .selectFrom('campaigns')
    .selectAll()
    .where('id', '=', campaignId)
    .executeTakeFirst();
  if (campaign?.status !== 'sending') return 0;
  const content = await campaignContent(ctx, campaign, { variant: null });
  // a throttled campaign writes a few seconds of sending at a time, just before it is due
  const pace = writerPace(
    await campaignStepMs(ctx.db, { ...campaign, from_address: content.fromAddress }, routeView(ctx.config)),
    CAMPAIGN_BATCH,
  );
  const testing = testPhaseOf(campaign);
  return ctx.db.transaction().execute(async (tx) => {
    // a pause or cancel committed since the read above wins: it waits for this lock, or this sees it
    const still = await tx
      .selectFrom('campaigns')
      .select('status')
      .where('id', '=', campaignId)
      .forShare()
      .executeTakeFirst();
    if (still?.status !== 'sending') return 0;
    // a domain warming up: at most what is left of the day's volume, the engaged first
    const plan = await activePlan(tx, campaign.project_id, domainOf(content.fromAddress));
    const limit = plan ? Math.min(pace.batch, await lockToday(tx, plan)) : pace.batch;
    if (limit === 0) {
      await addJobs([campaignJob(campaignId, new Date(Date.now() + msUntilNextDay()))]).execute(tx);
      return 0;
    }
    const timed = await hasTimedPending(tx, campaignId);
    const { rows: picked } = await sql<Picked>`
      select r.contact_id, r.email, c.first_name, c.last_name, coalesce(c.properties, '{}'::jsonb) as properties,
             c.id is not null as found, r.variant
        from campaign_recipients r left join contacts c on c.id = r.contact_id
       where r.campaign_id = ${campaignId} and r.status = 'pending' ${timed ? sql`and ${dueNow()}` : sql``}
             ${testing ? sql`and r.variant is not null` : sql``}
       order by ${plan ? sql`r.priority, r.contact_id` : campaign.local_time !== null ? sql`r.send_after, r.contact_id` : sql`r.contact_id`}
       limit ${limit}
         for update of r skip locked`.execute(tx);
    // recipients whose local time is now inside the quiet hours wait for their end (local-send.ts)
    const quiet = await holdForQuietHours(tx, campaign.project_id, campaignId, picked);
    const writing = quiet.size > 0 ? picked.filter((r) => !quiet.has(r.contact_id)) : picked;
    if (writing.length === 0) {
      // recipients waiting for their local time or the end of quiet hours: this job again then
      const wake = timed || quiet.size > 0 ? await nextWaiting(tx, campaignId, testing !== null) : null;
      if (wake) await addJobs([campaignJob(campaignId, realTimeOf(wake))]).execute(tx);
      else if (testing) await startWinnerWait(tx, campaignId, testing);
      else await addJobs([finishJob(campaignId, 0)]).execute(tx);
      return 0;
    }
    const next =
      picked.length === limit
        ? campaignJob(campaignId, pace.aheadMs > 0 ? new Date(Date.now() + pace.aheadMs) : undefined)
        : // the test's last batch: the next run finds none pending and starts the wait
          testing
          ? campaignJob(campaignId)
          : finishJob(campaignId);
    const contentOf = campaign.ab_test
      ? await recipientContents(
          ctx,
          campaign,
          writing.map((r) => r.variant),
        )
      : () => content;
    const written = await writeBatch(tx, ctx, campaign, contentOf, writing, next);
    if (plan) await reserve(tx, [{ domainId: plan.domainId, day: plan.day, n: written }]);
    return writing.length;
  });
}

interface Outcome {
  contact_id: string;
  status: 'queued' | 'skipped' | 'failed';
  email_id: string | null;
  reason: string | null;
}

type ContentOf = (variant: number | null) => CampaignContent;

const contactOf = (r: Picked): TemplateContact => ({
  email: r.email,
  first_name: r.first_name,
  last_name: r.last_name,
  properties: r.properties,
});

/** Each found recipient's message rendered (to check it, and keep its subject) in the template pool. */
async function renderRecipients(campaign: CampaignRow, contentOf: ContentOf, picked: Picked[]) {
  const found = picked.filter((r) => r.found);
  const renders = await renderEach(
    campaign.project_id,
    found.map((r) => {
      const content = contentOf(r.variant);
      return {
        source: content.source,
        given: content.template?.variables,
        contact: contactOf(r),
        deriveText: false,
      };
    }),
  );
  return new Map(found.map((r, i) => [r, renders[i]]));
}

async function emailsOf(ctx: DomainContext, campaign: CampaignRow, contentOf: ContentOf, picked: Picked[]) {
  const renderOf = await renderRecipients(campaign, contentOf, picked);
  const outcomes: Outcome[] = [];
  const emails: EmailRowInput[] = [];
  let onShared = 0;
  const sharedFrom = sharedDefaultFrom(ctx);
  for (const r of picked) {
    // a contact deleted since the snapshot is not written to
    if (!r.found) {
      outcomes.push({
        contact_id: r.contact_id,
        status: 'skipped',
        email_id: null,
        reason: 'contact deleted',
      });
      continue;
    }
    const content = contentOf(r.variant);
    const rendered = renderOf.get(r);
    if (!rendered || 'error' in rendered) {
      const reason = rendered?.error ?? 'not rendered';
      outcomes.push({ contact_id: r.contact_id, status: 'failed', email_id: null, reason });
      continue;
    }
    if (content.fromAddress === sharedFrom) onShared++;
    const email = emailRow({
      projectId: campaign.project_id,
      origin: {
        kind: 'campaign',
        campaign,
        variation: variationOf(campaign, r.variant),
        contactId: r.contact_id,
      },
      from: { name: content.fromName ?? '', address: content.fromAddress },
      to: [mailboxOf(r.email)],
      replyTo: content.replyTo ? [mailboxOf(content.replyTo)] : [],
      body: renderedBody(rendered, content.template, templateData(content, contactOf(r))),
    });
    emails.push(email);
    outcomes.push({ contact_id: r.contact_id, status: 'queued', email_id: email.id, reason: null });
  }
  return { emails, outcomes, onShared };
}

/**
 * The batch's emails, their `queued` events, usage and delivery jobs through the one durable write
 * of every send (accept.ts `applyWrite`), and the recipients' statuses, in the caller's transaction.
 */
async function writeBatch(
  tx: Tx,
  ctx: DomainContext,
  campaign: CampaignRow,
  contentOf: ContentOf,
  picked: Picked[],
  next: JobSpec,
) {
  const { emails, outcomes, onShared } = await emailsOf(ctx, campaign, contentOf, picked);
  await applyWrite(
    tx,
    queuedWrite(campaign.project_id, emails, {
      detail: { campaign_id: campaign.id },
      onSharedDomain: onShared,
      jobs: [next],
      priority: BULK_PRIORITY,
    }),
  );
  await sql`
    update campaign_recipients r set status = o.status, email_id = o.email_id, reason = o.reason
      from json_populate_recordset(null::campaign_recipients, ${JSON.stringify(outcomes)}::json) o
     where r.campaign_id = ${campaign.id} and r.contact_id = o.contact_id`.execute(tx);
  return emails.length;
}

/** Email statuses that mean the message was handed over to the recipient's side. */
const HANDED_OVER = ['sent', 'delivered', 'bounced', 'complained'];

/**
 * The finish check: a campaign is `sent` (with finished_at) once no recipient is pending and
 * every written email is final; until then it looks again shortly. A campaign none of whose
 * messages was handed over because every one failed (its render, or its delivery) is `failed`
 * instead, with the first reason in `failure_reason`. Recipients left pending (a batch job lost to
 * a crash) get their job back. The rest of an A/B campaign stays pending until its winner is
 * picked, so such a campaign is never sent before its winner phase is done (the writer, woken
 * here, only starts the wait again, which changes nothing).
 */
export async function finishCampaign(ctx: Pick<DomainContext, 'db'>, campaignId: string): Promise<boolean> {
  const { rows } = await sql<{
    pending: number;
    open: number;
    handed: number;
    failed: number;
    total: number;
    reason: string | null;
  }>`
    select count(*) filter (where r.status = 'pending')::int as pending,
           count(*) filter (where r.status = 'queued' and (e.status is null or e.status <> all(${FINAL}::text[])))::int as open,
           count(*) filter (where e.status = any(${HANDED_OVER}::text[]))::int as handed,
           count(*) filter (where r.status = 'failed' or e.status = 'failed')::int as failed,
           count(*)::int as total,
           min(coalesce(r.reason, e.last_response)) filter (where r.status = 'failed' or e.status = 'failed') as reason
      from campaign_recipients r left join emails e on e.id = r.email_id
     where r.campaign_id = ${campaignId}`.execute(ctx.db);
  const { pending, open, handed, failed, total, reason } = rows[0];
  return ctx.db.transaction().execute(async (tx) => {
    const campaign = await tx
      .selectFrom('campaigns')
      .select(['status', 'recipient_count'])
      .where('id', '=', campaignId)
      .forUpdate()
      .executeTakeFirst();
    if (campaign?.status !== 'sending') return false;
    if (pending > 0 || open > 0) {
      await addJobs([pending > 0 ? campaignJob(campaignId) : finishJob(campaignId)]).execute(tx);
      return false;
    }
    const everyOneFailed = handed === 0 && failed > 0;
    await tx
      .updateTable('campaigns')
      .set({
        status: everyOneFailed ? 'failed' : 'sent',
        failure_reason: everyOneFailed
          ? `No message went out: ${failed} of ${total} recipients failed, for example: ${reason ?? 'none recorded'}`.slice(
              0,
              2000,
            )
          : null,
        finished_at: new Date(),
        updated_at: new Date(),
      })
      .where('id', '=', campaignId)
      .execute();
    // a large campaign's page is counted once now, so its first read after the send waits for nothing
    if (countedAhead({ status: 'sent', recipient_count: campaign.recipient_count }))
      await addJobs([statsRefreshJob(campaignId)]).execute(tx);
    return true;
  });
}

import { sql } from 'kysely';
import { addJobs, enqueue } from '../../db/enqueue.ts';
import type { CampaignStatus } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ConflictError, DomainError, ValidationError } from '../core/errors.ts';
import { emailRow, mailboxOf, renderedBody } from '../emails/email-row.ts';
import { applyWrite, type EmailRowInput, queuedWrite } from '../emails/write.ts';
import { type ProjectFacts, projectFacts, sharedDefaultFrom } from '../plans/project-facts.ts';
import type { GateOverride } from '../reputation/gate-pass.ts';
import { checkBreakerResume, closeTrips, passWiderStops, type Resumer } from '../shaping/breaker-write.ts';
import type { TemplateContact } from '../templates/render.ts';
import { renderInPool } from '../templates/render-pool.ts';
import { type CampaignRow, campaignView, findCampaign } from './campaigns.ts';
import { type CampaignContent, templateData } from './content.ts';
import { holdCampaign, waitForWriter } from './hold.ts';
import {
  campaignJob,
  checkCampaignSend,
  checkCampaignStart,
  STARTABLE,
  startCampaign,
  startJob,
  startJobKey,
} from './send.ts';

/**
 * The campaign actions besides /send: schedule, pause, resume, cancel, and test sends. Each status
 * change is a conditional UPDATE, so two actions at once never both win, and what goes with it
 * (jobs, recipients, emails) is written in the same transaction.
 */

/** How far ahead a campaign may be scheduled. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 86_400_000;
/** The statuses a campaign may be cancelled from: anything not yet final. */
const CANCELLABLE: CampaignStatus[] = ['draft', 'scheduled', 'sending', 'paused'];
const WITH_ZONE = /(Z|[+-]\d{2}:?\d{2})$/i;

/** 409 naming the campaign's status and the ones the action needs. */
function wrongStatus(c: Pick<CampaignRow, 'name' | 'status'>, action: string, allowed: CampaignStatus[]) {
  const either = `${allowed.slice(0, -1).join(', ')}${allowed.length > 1 ? ' or ' : ''}${allowed.at(-1)}`;
  return new ConflictError(`Campaign "${c.name}" is ${c.status}: only a ${either} campaign can be ${action}`);
}

/** `scheduled_at` as a moment in the future, at most a year ahead, with an explicit time zone. */
function scheduleTime(value: string): Date {
  const at = WITH_ZONE.test(value) ? parseIsoDate(value, { timeRequired: true }) : null;
  if (!at)
    throw new ValidationError(
      '`scheduled_at` must be an ISO 8601 date-time with a time zone, such as 2026-11-01T09:00:00Z',
    );
  const now = Date.now();
  if (at.getTime() <= now)
    throw new ValidationError(
      `\`scheduled_at\` must be in the future: ${at.toISOString()} has passed (it is now ${new Date(now).toISOString()})`,
    );
  if (at.getTime() > now + MAX_SCHEDULE_AHEAD_MS)
    throw new ValidationError('`scheduled_at` must be at most one year from now');
  return at;
}

/**
 * POST /campaigns/{id}/schedule: the start checks run now, so a problem shows when scheduling and
 * not at the time; then in ONE transaction the status `scheduled`, `scheduled_at` and the
 * `campaign_start` job at that time, whose job key makes a reschedule replace it. 409 unless draft
 * or scheduled. The campaign stays editable until it starts.
 */
export async function scheduleCampaign(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  when: string,
  override?: GateOverride,
) {
  const at = scheduleTime(when);
  const campaign = await findCampaign(ctx, facts.id, id);
  if (!STARTABLE.includes(campaign.status)) throw wrongStatus(campaign, 'scheduled', STARTABLE);
  await checkCampaignStart(ctx, facts, campaign, override);
  const row = await ctx.db.transaction().execute(async (tx) => {
    const scheduled = await tx
      .updateTable('campaigns')
      .set({ status: 'scheduled', scheduled_at: at, updated_at: new Date() })
      .where('id', '=', campaign.id)
      .where('status', 'in', STARTABLE)
      .returningAll()
      .executeTakeFirst();
    if (scheduled) await enqueue(tx, [startJob(campaign.id, at)]);
    return scheduled;
  });
  if (!row) throw wrongStatus(await findCampaign(ctx, facts.id, id), 'scheduled', STARTABLE);
  return campaignView(ctx, row);
}

/**
 * The `campaign_start` job: starts a campaign that is still `scheduled` and due, as /send does (the
 * checks, then the audience snapshot taken at this moment). A campaign no longer scheduled (sent
 * early, cancelled) is left alone; one whose checks now fail becomes `failed` with the reason in
 * `failure_reason`, and no message leaves. Other errors are thrown, so the job is retried.
 */
export async function startScheduledCampaign(
  ctx: DomainContext,
  campaignId: string,
): Promise<'started' | 'failed' | 'skipped'> {
  const found = await ctx.db
    .selectFrom('campaigns')
    .selectAll()
    // in the database's clock, which ran the job; a second of skew between nodes still counts as due
    .select(sql<boolean>`scheduled_at <= now() + interval '1 second'`.as('due'))
    .where('id', '=', campaignId)
    .executeTakeFirst();
  if (found?.status !== 'scheduled') return 'skipped';
  const { due, ...campaign } = found;
  if (!due && campaign.scheduled_at) {
    // a reschedule while this job was already running: its replacement keeps the new time
    await addJobs([startJob(campaign.id, campaign.scheduled_at)]).execute(ctx.db);
    return 'skipped';
  }
  try {
    const content = await checkCampaignStart(ctx, await projectFacts(ctx, campaign.project_id), campaign);
    await startCampaign(ctx, campaign, ['scheduled'], content.fromAddress);
    return 'started';
  } catch (err) {
    // a conflict is a cancel (or a /send) that came first: nothing to do
    if (err instanceof ConflictError) return 'skipped';
    if (!(err instanceof DomainError)) throw err;
    await ctx.db
      .updateTable('campaigns')
      .set({ status: 'failed', failure_reason: err.message, updated_at: new Date() })
      .where('id', '=', campaign.id)
      .where('status', '=', 'scheduled')
      .execute();
    return 'failed';
  }
}

/**
 * POST /campaigns/{id}/pause: `sending` → `paused` (409 otherwise). The batch job writes nothing
 * more (it writes only for a sending campaign), and in the same transaction the campaign's emails
 * still `queued` (written, not yet claimed by delivery) are taken back: deleted, their recipients
 * `pending` again and their usage returned, so /resume writes them afresh and nothing is counted
 * twice. Deleting rather than leaving them is what makes a pause stop the mail: without a rate
 * limit the writer runs far ahead of delivery. What may still leave after a pause is bounded: the
 * messages delivery had already claimed (`sending`, at most a delivery job each per worker slot),
 * retries of `deferred` ones, and at most one batch whose job read the status just before the pause.
 */
export async function pauseCampaign(ctx: DomainContext, projectId: string, id: string) {
  const campaign = await findCampaign(ctx, projectId, id);
  if (campaign.status !== 'sending') throw wrongStatus(campaign, 'paused', ['sending']);
  const row = await ctx.db.transaction().execute(async (tx) => {
    const paused = await tx
      .updateTable('campaigns')
      .set({ status: 'paused', updated_at: new Date() })
      .where('id', '=', campaign.id)
      .where('status', '=', 'sending')
      .returningAll()
      .executeTakeFirst();
    if (!paused) return null;
    await holdCampaign(tx, campaign.id, sharedDefaultFrom(ctx));
    return paused;
  });
  if (!row) throw wrongStatus(await findCampaign(ctx, projectId, id), 'paused', ['sending']);
  return campaignView(ctx, row);
}

/**
 * POST /campaigns/{id}/resume: `paused` → `sending` (409 otherwise) and its `campaign_send` job,
 * in one transaction. The audience is NOT taken again: the recipients snapshotted at the start that
 * are still pending get their message. Checked first: the account and footer, the content and
 * `from`, and the allowance for the recipients still to write (402 leaves it paused).
 */
export async function resumeCampaign(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  by: Resumer = { who: 'unknown', admin: true },
) {
  const campaign = await findCampaign(ctx, facts.id, id);
  if (campaign.status !== 'paused') throw wrongStatus(campaign, 'resumed', ['paused']);
  if (campaign.paused_reason) checkBreakerResume(campaign.paused_reason, by, 'resume');
  const content = await checkCampaignSend(ctx, facts, campaign, async () => {
    const { n: pending } = await ctx.db
      .selectFrom('campaign_recipients')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('campaign_id', '=', campaign.id)
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return Number(pending);
  });
  // its domain or project stopped by the breaker: the same admin's reason resumes them too
  await passWiderStops(ctx.db, facts.id, content.fromAddress, by, 'resume it');
  const row = await ctx.db.transaction().execute(async (tx) => {
    const resumed = await tx
      .updateTable('campaigns')
      .set({ status: 'sending', paused_reason: null, updated_at: new Date() })
      .where('id', '=', campaign.id)
      .where('status', '=', 'paused')
      .returningAll()
      .executeTakeFirst();
    if (resumed) {
      await enqueue(tx, [campaignJob(campaign.id)]);
      if (campaign.paused_reason) await closeTrips(tx, 'campaign', campaign.id, by);
    }
    return resumed;
  });
  if (!row) throw wrongStatus(await findCampaign(ctx, facts.id, id), 'resumed', ['paused']);
  return campaignView(ctx, row);
}

/**
 * POST /campaigns/{id}/cancel: draft, scheduled, sending or paused → `cancelled` (409 from sent,
 * cancelled or failed), in ONE transaction: the scheduled start is removed, pending recipients
 * become `cancelled`, and the campaign's emails not yet claimed by delivery (`queued`, or
 * `deferred` awaiting a retry) become `cancelled` with a `cancelled` event, as a cancelled
 * scheduled email does, so they never leave. The finish check only completes a `sending` campaign,
 * so a cancelled one is never marked sent.
 */
export async function cancelCampaign(ctx: DomainContext, projectId: string, id: string) {
  const campaign = await findCampaign(ctx, projectId, id);
  if (!CANCELLABLE.includes(campaign.status)) throw wrongStatus(campaign, 'cancelled', CANCELLABLE);
  const row = await ctx.db.transaction().execute(async (tx) => {
    const cancelled = await tx
      .updateTable('campaigns')
      .set({ status: 'cancelled', updated_at: new Date() })
      .where('id', '=', campaign.id)
      .where('status', 'in', CANCELLABLE)
      .returningAll()
      .executeTakeFirst();
    if (!cancelled) return null;
    await sql`select graphile_worker.remove_job(${startJobKey(campaign.id)})`.execute(tx);
    await waitForWriter(tx, campaign.id);
    await sql`with stopped as (
        update emails e set status = 'cancelled', updated_at = now()
          from campaign_recipients r
         where r.campaign_id = ${campaign.id} and r.status = 'queued' and e.id = r.email_id
           and e.status in ('queued', 'deferred')
        returning e.id, e.project_id
      ), events as (
        insert into email_events (email_id, project_id, type, recipient, detail)
        select id, project_id, 'cancelled', null,
               jsonb_build_object('reason', 'campaign cancelled', 'campaign_id', ${campaign.id}::text)
          from stopped
      )
      update campaign_recipients r set status = 'cancelled'
       where r.campaign_id = ${campaign.id}
         and (r.status = 'pending' or r.email_id in (select id from stopped))`.execute(tx);
    return cancelled;
  });
  if (!row) throw wrongStatus(await findCampaign(ctx, projectId, id), 'cancelled', CANCELLABLE);
  return campaignView(ctx, row);
}

/** The addresses of the project's members (lower-cased): the only ones a test may go to. */
async function memberAddresses(ctx: Pick<DomainContext, 'db'>, projectId: string): Promise<Set<string>> {
  const rows = await ctx.db
    .selectFrom('project_members as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select('a.email')
    .where('m.project_id', '=', projectId)
    .execute();
  return new Set(rows.map((r) => r.email.toLowerCase()));
}

/** The project's contacts among the addresses, by lower-cased address, as Liquid sees them. */
async function contactsOf(ctx: Pick<DomainContext, 'db'>, projectId: string, addresses: string[]) {
  const rows = await ctx.db
    .selectFrom('contacts')
    .select(['id', 'email', 'first_name', 'last_name', 'properties'])
    .where('project_id', '=', projectId)
    .where(
      sql<string>`lower(email)`,
      'in',
      addresses.map((a) => a.toLowerCase()),
    )
    .execute();
  return new Map(rows.map((r) => [r.email.toLowerCase(), r]));
}

type TestContact = NonNullable<ReturnType<Awaited<ReturnType<typeof contactsOf>>['get']>>;

/**
 * One test message, made as the batch job makes a recipient's (content, sender, tracking), with
 * `[Test] ` before the subject and no campaign id (so no stats). It names the address's contact
 * when the project has one (its fields for Liquid, its unsubscribe link); otherwise Liquid sees
 * the bare address and the marker header sends the unsubscribe link to the test page.
 */
async function testEmail(
  campaign: CampaignRow,
  content: CampaignContent,
  to: string,
  contact: TestContact | undefined,
): Promise<EmailRowInput> {
  const person: TemplateContact = {
    email: contact?.email ?? to,
    first_name: contact?.first_name ?? null,
    last_name: contact?.last_name ?? null,
    properties: (contact?.properties ?? {}) as Record<string, unknown>,
  };
  const rendered = await renderInPool(campaign.project_id, {
    source: content.source,
    given: content.template?.variables,
    contact: person,
    deriveText: false,
  });
  return emailRow({
    projectId: campaign.project_id,
    origin: { kind: 'campaign_test', campaign, contactId: contact?.id ?? null },
    from: { name: campaign.from_name ?? '', address: content.fromAddress },
    to: [mailboxOf(to)],
    replyTo: content.replyTo ? [mailboxOf(content.replyTo)] : [],
    body: renderedBody(
      { subject: `[Test] ${rendered.subject}`.slice(0, 998), html: rendered.html },
      content.template,
      templateData(content, person),
    ),
  });
}

/**
 * POST /campaigns/{id}/test: one message per address (1 to 5), rendered as the campaign's would be,
 * with `[Test] ` before the subject, on the marketing stream (footer, List-Unsubscribe, tracking).
 * Only to members of the project (400 naming any other address), in any status but cancelled
 * (409). Not part of the campaign (no recipient row, no campaign id: no stats) but counted in usage,
 * written through the one durable write of every send.
 */
export async function sendCampaignTest(ctx: DomainContext, facts: ProjectFacts, id: string, to: string[]) {
  const campaign = await findCampaign(ctx, facts.id, id);
  if (campaign.status === 'cancelled')
    throw new ConflictError(`Campaign "${campaign.name}" is cancelled: it can no longer be tested`);
  const addresses = [...new Map(to.map((a) => [a.trim().toLowerCase(), a.trim()])).values()];
  if (addresses.length === 0) throw new ValidationError('`to` must hold 1 to 5 addresses');
  const members = await memberAddresses(ctx, facts.id);
  const stranger = addresses.find((a) => !members.has(a.toLowerCase()));
  if (stranger !== undefined)
    throw new ValidationError(
      `\`to\`: ${JSON.stringify(stranger)} is not a member of this project: tests go only to the account email addresses of the project's members`,
    );
  const content = await checkCampaignSend(ctx, facts, campaign, addresses.length);
  const contacts = await contactsOf(ctx, facts.id, addresses);
  const emails = await Promise.all(
    addresses.map((a) => testEmail(campaign, content, a, contacts.get(a.toLowerCase()))),
  );
  await applyWrite(
    ctx.db,
    queuedWrite(facts.id, emails, {
      detail: { campaign_id: campaign.id, test: true },
      onSharedDomain: content.fromAddress === sharedDefaultFrom(ctx) ? emails.length : 0,
    }),
  );
  return {
    object: 'campaign_test' as const,
    sent: emails.map((e) => ({ to: e.to_addresses[0], email_id: e.id })),
  };
}

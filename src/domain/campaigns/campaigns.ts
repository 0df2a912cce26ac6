import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { CampaignStatus, CampaignsTable } from '../../db/schema.ts';
import type { DomainContext } from '../core/context.ts';
import { ConflictError, NotFoundError } from '../core/errors.ts';
import { deleteUnlessBusy, findInProject } from '../core/find.ts';
import { clockOf } from '../core/local-time.ts';
import { type Page, readPage } from '../core/pages.ts';
import type { ProjectFacts } from '../plans/project-facts.ts';
import { presentRate } from '../shaping/sending-rates.ts';
import { campaignWarmup } from '../shaping/warmup.ts';
import { countAudience } from './audience.ts';
import {
  applyInput,
  type CampaignFields,
  type CampaignInput,
  checkCampaign,
  EMPTY_CAMPAIGN,
} from './fields.ts';
import { waitingOf } from './local-send.ts';
import { campaignRevenue, campaignStats, presentAb, presentStats } from './stats.ts';
import { countedPart } from './stats-cache.ts';

export type CampaignRow = Selectable<CampaignsTable>;
export type { CampaignInput } from './fields.ts';

/**
 * Once sending has started (paused included: part of the audience has its message) or the campaign
 * was cancelled or failed, its content and audience are fixed.
 */
const FROZEN: CampaignStatus[] = ['sending', 'paused', 'sent', 'cancelled', 'failed'];

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/**
 * A campaign's stored fields as the API shows them (what actions answer); GET, POST and PATCH add
 * the stats and A/B results (`campaignView`), list rows their cheap part.
 */
export function presentCampaign(row: CampaignRow) {
  return {
    id: row.id,
    object: 'campaign' as const,
    name: row.name,
    status: row.status,
    failure_reason: row.failure_reason,
    paused_reason: row.paused_reason,
    from: row.from_address,
    from_name: row.from_name,
    reply_to: row.reply_to,
    subject: row.subject,
    preheader: row.preheader,
    template_id: row.template_id,
    template_version: row.template_version,
    variables: row.template_variables,
    html: row.html,
    list_ids: row.list_ids,
    segment_ids: row.segment_ids,
    exclude_list_ids: row.exclude_list_ids,
    exclude_segment_ids: row.exclude_segment_ids,
    topic_id: row.topic_id,
    local_time: row.local_time === null ? null : clockOf(row.local_time),
    tracking: { opens: row.track_opens, clicks: row.track_clicks },
    tags: row.tags,
    rate: presentRate(row),
    ab_test: row.ab_test,
    scheduled_at: iso(row.scheduled_at),
    recipient_count: row.recipient_count,
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The campaign with its full stats and, for an A/B campaign, each variant's results (one aggregate). */
export async function campaignView(ctx: DomainContext, row: CampaignRow) {
  const { value, asOf } = await countedPart(ctx, row, 'stats', () => campaignPageStats(ctx, row));
  return {
    ...presentCampaign(row),
    ...value,
    stats_as_of: asOf?.toISOString() ?? null,
    warmup: await warmupOf(ctx, row),
    // recipients waiting for their local time or the end of quiet hours, per instant
    waiting: row.status === 'sending' || row.status === 'paused' ? await waitingOf(ctx.db, row.id) : [],
  };
}

/** The campaign's place in its domain's warm-up while it has recipients to send (reputation/warmup.ts). */
async function warmupOf(ctx: DomainContext, row: CampaignRow) {
  if (!['draft', 'scheduled', 'sending', 'paused'].includes(row.status)) return null;
  const started = row.status === 'sending' || row.status === 'paused';
  const pending = async () =>
    started
      ? Number(
          (
            await ctx.db
              .selectFrom('campaign_recipients')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('campaign_id', '=', row.id)
              .where('status', '=', 'pending')
              .executeTakeFirstOrThrow()
          ).n,
        )
      : await countAudience(ctx, row);
  return campaignWarmup(ctx.db, row, pending);
}

/** What a campaign's page shows of its stats: the whole campaign's, and each A/B variant's. */
export async function campaignPageStats(ctx: Pick<DomainContext, 'db'>, row: CampaignRow) {
  const result = (await campaignStats(ctx.db, [row.id])).get(row.id);
  return { stats: presentStats(result?.total), ab: presentAb(row, result) };
}

export function findCampaign(
  ctx: Pick<DomainContext, 'db'>,
  projectId: string,
  id: string,
): Promise<CampaignRow> {
  return findInProject(ctx.db, 'campaigns', 'Campaign', projectId, id);
}

/**
 * GET /campaigns: the project's campaigns, newest first, paginated. Each row's `stats` holds only
 * the cheap part (recipients and attributed revenue, one query for the page): the full stats read
 * every recipient of a campaign, which GET /campaigns/{id} does for one.
 */
export async function listCampaigns(ctx: Pick<DomainContext, 'db'>, projectId: string, page: Page) {
  const { rows, ...found } = await readPage(
    ctx.db.selectFrom('campaigns').where('project_id', '=', projectId),
    (base) => base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc'),
    page,
  );
  const revenue = await campaignRevenue(
    ctx.db,
    rows.map((r) => r.id),
  );
  const data = rows.map((row) => ({
    ...presentCampaign(row),
    stats: { recipients: row.recipient_count ?? 0, revenue: revenue.get(row.id) ?? [] },
  }));
  return { data, ...found };
}

/** GET /campaigns/{id}. */
export async function getCampaign(ctx: DomainContext, projectId: string, id: string) {
  return campaignView(ctx, await findCampaign(ctx, projectId, id));
}

/** POST /campaigns: a draft, checked as a whole (sender on a verified domain, content, audience). */
export async function createCampaign(ctx: DomainContext, facts: ProjectFacts, input: CampaignInput) {
  const values = await checkCampaign(ctx, facts, applyInput(EMPTY_CAMPAIGN, input));
  const row = await ctx.db
    .insertInto('campaigns')
    .values({ id: randomUUID(), project_id: facts.id, ...values })
    .returningAll()
    .executeTakeFirstOrThrow();
  return campaignView(ctx, row);
}

/**
 * A copy of a campaign as a new draft (the Resend door's `broadcasts.duplicate`): its content,
 * sender, audience, topic and settings, named "… (copy)", checked as a new campaign is.
 */
export async function duplicateCampaign(ctx: DomainContext, facts: ProjectFacts, id: string) {
  const current = await findCampaign(ctx, facts.id, id);
  const { id: _i, project_id: _p, status: _s, created_at: _c, updated_at: _u, ...stored } = current;
  const fields = Object.fromEntries(
    Object.keys(EMPTY_CAMPAIGN).map((k) => [k, stored[k as keyof typeof stored]]),
  ) as unknown as CampaignFields;
  const values = await checkCampaign(ctx, facts, { ...fields, name: `${current.name} (copy)`.slice(0, 200) });
  const row = await ctx.db
    .insertInto('campaigns')
    .values({ id: randomUUID(), project_id: facts.id, ...values })
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentCampaign(row);
}

const frozen = (row: Pick<CampaignRow, 'name' | 'status'>) =>
  new ConflictError(`Campaign "${row.name}" is ${row.status}: it can no longer be edited`);

/** PATCH /campaigns/{id}: edits a campaign not yet sending (409 once sending, sent or cancelled). */
export async function updateCampaign(
  ctx: DomainContext,
  facts: ProjectFacts,
  id: string,
  input: CampaignInput,
) {
  const current = await findCampaign(ctx, facts.id, id);
  if (FROZEN.includes(current.status)) throw frozen(current);
  const { id: _i, project_id: _p, status: _s, created_at: _c, updated_at: _u, ...stored } = current;
  const fields: CampaignFields = { ...EMPTY_CAMPAIGN, ...stored };
  const values = await checkCampaign(ctx, facts, applyInput(fields, input));
  // the status is checked again in the write: a send that started meanwhile wins
  const row = await ctx.db
    .updateTable('campaigns')
    .set({ ...values, updated_at: new Date() })
    .where('id', '=', current.id)
    .where('status', 'not in', FROZEN)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw frozen(await findCampaign(ctx, facts.id, id));
  return campaignView(ctx, row);
}

/** DELETE /campaigns/{id}: refused (409) while the campaign is sending; its recipients go with it. */
export async function deleteCampaign(ctx: Pick<DomainContext, 'db'>, projectId: string, id: string) {
  const current = await findCampaign(ctx, projectId, id);
  if (!(await deleteUnlessBusy(ctx.db, 'campaigns', current.id, 'sending'))) {
    const now = await findCampaign(ctx, projectId, id).catch(() => null);
    if (!now) throw new NotFoundError('Campaign');
    throw new ConflictError(`Campaign "${now.name}" is sending: pause or cancel it before deleting it`);
  }
}

/** GET /campaigns/{id}/audience: the recipient count preview. */
export async function previewAudience(ctx: DomainContext, projectId: string, id: string) {
  const campaign = await findCampaign(ctx, projectId, id);
  return {
    object: 'campaign_audience' as const,
    campaign_id: campaign.id,
    recipients: await countAudience(ctx, campaign),
  };
}

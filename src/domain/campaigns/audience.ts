import { type RawBuilder, sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { Group } from '../audience/segment-language.ts';
import { compileDefinition } from '../audience/segment-language.ts';
import { withSegmentSettings } from '../audience/segments.ts';
import type { DomainContext } from '../core/context.ts';
import { reasonsBlocking } from '../emails/suppressions.ts';
import { type CampaignRow, findCampaign } from './campaigns.ts';

/** What a campaign's audience is made of. */
export type CampaignAudience = Pick<
  CampaignRow,
  'id' | 'project_id' | 'list_ids' | 'segment_ids' | 'exclude_list_ids' | 'exclude_segment_ids'
>;

/**
 * The campaign's recipients as one SELECT of (id, email) over `contacts`: contacts subscribed to
 * marketing that are subscribed members of one of its lists or match one of its segments, minus
 * every member of an exclusion list (subscribed to it or not) and every match of an exclusion
 * segment, minus addresses suppressed for marketing. Each contact comes once: it is one row of
 * `contacts`. Segments compile with the condition language; lists and segments since deleted
 * (or of another project) count as empty.
 */
async function audienceQuery(
  db: Db | Tx,
  c: CampaignAudience,
): Promise<RawBuilder<{ id: string; email: string }>> {
  const segmentIds = [...new Set([...c.segment_ids, ...c.exclude_segment_ids])];
  const segments =
    segmentIds.length === 0
      ? []
      : await db
          .selectFrom('segments')
          .select(['id', 'definition'])
          .where('project_id', '=', c.project_id)
          .where('id', 'in', segmentIds)
          .execute();
  const matching = (ids: string[]) =>
    segments
      .filter((s) => ids.includes(s.id))
      .map((s) => sql<boolean>`coalesce(${compileDefinition(c.project_id, s.definition as Group)}, false)`);
  const include = [...matching(c.segment_ids)];
  if (c.list_ids.length > 0)
    include.unshift(sql<boolean>`exists (select 1 from list_members lm join lists l on l.id = lm.list_id
      where lm.contact_id = contacts.id and lm.subscribed and l.project_id = ${c.project_id}
        and lm.list_id = any(${c.list_ids}::uuid[]))`);
  const exclude = [...matching(c.exclude_segment_ids)];
  if (c.exclude_list_ids.length > 0)
    exclude.unshift(sql<boolean>`exists (select 1 from list_members lm join lists l on l.id = lm.list_id
      where lm.contact_id = contacts.id and l.project_id = ${c.project_id}
        and lm.list_id = any(${c.exclude_list_ids}::uuid[]))`);
  if (include.length === 0) return sql`select contacts.id, contacts.email from contacts where false`;
  return sql`select contacts.id, contacts.email from contacts
    where contacts.project_id = ${c.project_id} and contacts.subscribed
      and (${sql.join(include, sql` or `)})
      ${exclude.length > 0 ? sql`and not (${sql.join(exclude, sql` or `)})` : sql``}
      and not exists (select 1 from suppressions s where s.project_id = ${c.project_id}
        and s.email = contacts.email and s.reason = any(${reasonsBlocking('marketing')}::text[]))`;
}

/**
 * Writes the campaign's audience into `campaign_recipients` with one INSERT ... SELECT (contacts
 * never pass through Node) and sets its `recipient_count`; returns how many rows this run added.
 * Keyed by (campaign, contact): running it again after a crash adds nothing already there.
 */
export async function snapshotAudience(db: Db | Tx, campaign: CampaignAudience): Promise<number> {
  const audience = await audienceQuery(db, campaign);
  const { rows } = await sql<{ added: number }>`with added as (
      insert into campaign_recipients (campaign_id, contact_id, email)
      select ${campaign.id}::uuid, a.id, a.email from (${audience}) a
      on conflict (campaign_id, contact_id) do nothing
      returning 1
    )
    update campaigns
       set recipient_count = (select count(*) from campaign_recipients r where r.campaign_id = ${campaign.id})
                             + (select count(*) from added)
     where id = ${campaign.id}
    returning (select count(*) from added)::int as added`.execute(db);
  return rows[0]?.added ?? 0;
}

/** How many recipients the campaign would have if sending started now (the snapshot's query, counted). */
export async function countAudience(ctx: DomainContext, campaign: CampaignAudience): Promise<number> {
  return withSegmentSettings(ctx, async (tx) => {
    const audience = await audienceQuery(tx, campaign);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from (${audience}) a`.execute(tx);
    return rows[0].n;
  });
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

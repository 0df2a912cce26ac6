import type { Selectable } from 'kysely';
import { type RawBuilder, sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import type { AbTestColumn, CampaignsTable } from '../../db/schema.ts';
import type { Group } from '../audience/segment-language.ts';
import { compileDefinition } from '../audience/segment-sql.ts';
import { withSegmentSettings } from '../audience/segments.ts';
import { now } from '../core/clock.ts';
import type { DomainContext } from '../core/context.ts';
import { reasonsBlocking } from '../emails/suppressions.ts';
import { localTimeOf } from '../plans/local-time-settings.ts';
import { isTimed, projectSendAfter, type Timing, timedAudience, zonesCte } from './local-send.ts';

/** What a campaign's audience is made of. */
export type CampaignAudience = Pick<
  Selectable<CampaignsTable>,
  'id' | 'project_id' | 'list_ids' | 'segment_ids' | 'exclude_list_ids' | 'exclude_segment_ids' | 'topic_id'
>;

/**
 * The campaign's topic as a condition on `contacts`: subscribed to it by choice, or by the topic's
 * default (`opt_in`: everyone who did not leave it; `opt_out`: only those who joined). Read as a
 * semi- or anti-join on `contact_topics`, so a million-contact snapshot stays one hash join. A
 * topic deleted since is one nobody is subscribed to. Without a topic: no condition.
 */
async function topicCondition(db: Db | Tx, c: CampaignAudience): Promise<RawBuilder<boolean> | null> {
  if (!c.topic_id) return null;
  const topic = await db
    .selectFrom('topics')
    .select(['id', 'default_subscription'])
    .where('project_id', '=', c.project_id)
    .where('id', '=', c.topic_id)
    .executeTakeFirst();
  if (!topic) return sql<boolean>`false`;
  return topic.default_subscription === 'opt_in'
    ? sql<boolean>`not exists (select 1 from contact_topics ct
        where ct.topic_id = ${topic.id} and ct.contact_id = contacts.id and not ct.subscribed)`
    : sql<boolean>`exists (select 1 from contact_topics ct
        where ct.topic_id = ${topic.id} and ct.contact_id = contacts.id and ct.subscribed)`;
}

/**
 * The campaign's recipients as one SELECT of (id, email) over `contacts`: contacts subscribed to
 * marketing that are subscribed members of one of its lists or match one of its segments, minus
 * every member of an exclusion list (subscribed to it or not) and every match of an exclusion
 * segment, minus addresses suppressed for marketing. Each contact comes once: it is one row of
 * `contacts`. Segments compile with the condition language; lists and segments since deleted
 * (or of another project) count as empty. A campaign for a topic keeps only its subscribers.
 */
async function audienceQuery(
  db: Db | Tx,
  c: CampaignAudience,
  withZone = false,
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
    // no join to `lists`: the ids were checked to be the project's, and `contacts.project_id` below
    // keeps any other project's members out (the join made the planner guess a handful of rows and
    // look a million contacts up one by one)
    include.unshift(sql<boolean>`exists (select 1 from list_members lm
      where lm.contact_id = contacts.id and lm.subscribed and lm.list_id = any(${c.list_ids}::uuid[]))`);
  const exclude = [...matching(c.exclude_segment_ids)];
  if (c.exclude_list_ids.length > 0)
    exclude.unshift(sql<boolean>`exists (select 1 from list_members lm
      where lm.contact_id = contacts.id and lm.list_id = any(${c.exclude_list_ids}::uuid[]))`);
  // a campaign at local time or under quiet hours also reads each contact's zone
  const columns = withZone
    ? sql`contacts.id, contacts.email, contacts.properties ->> 'timezone' as tz`
    : sql`contacts.id, contacts.email`;
  if (include.length === 0) return sql`select ${columns} from contacts where false`;
  const topic = await topicCondition(db, c);
  return sql`select ${columns} from contacts
    where contacts.project_id = ${c.project_id} and contacts.subscribed
      and (${sql.join(include, sql` or `)})
      ${topic ? sql`and ${topic}` : sql``}
      ${exclude.length > 0 ? sql`and not (${sql.join(exclude, sql` or `)})` : sql``}
      and not exists (select 1 from suppressions s where s.project_id = ${c.project_id}
        and s.email = contacts.email and s.reason = any(${reasonsBlocking('marketing')}::text[]))`;
}

/**
 * The recipients to insert: the audience, and for an A/B campaign each one's variant: a random
 * `test_share` percent of the audience (rounded up) gets one, the variants taking turns so the
 * split is even; the others get null (the winner's content, later).
 */
function recipientsOf(
  campaignId: string,
  audience: RawBuilder<{ id: string; email: string }>,
  ab: AbTestColumn | null,
  timing: { t: Timing; fallback: Date } | null,
) {
  // each row's send_after: null, or its zone's (local-send.ts)
  const rows = timing ? timedAudience(audience, timing.fallback) : sql`(${audience}) a`;
  const sendAfter = timing ? sql`a.send_after` : sql`null::timestamptz`;
  const zones = timing ? sql`with ${zonesCte(timing.t)}` : sql``;
  // in contact order: the primary key's index is built in order, not a million random probes
  if (!ab)
    return sql`${zones} select ${campaignId}::uuid, a.id, a.email, null::smallint, ${sendAfter}
      from ${rows} order by a.id`;
  return sql`${zones} select ${campaignId}::uuid, a.id, a.email,
           case when a.rn < ceil(a.n * ${ab.test_share}::numeric / 100) then (a.rn % ${ab.variants.length})::smallint end,
           ${sendAfter}
      from (select a.*, row_number() over (order by random()) - 1 as rn, count(*) over () as n
              from ${rows}) a`;
}

/**
 * Fixes what each A/B variant sends, as the start fixes the campaign's own template version: a
 * variant naming a template without a version gets the version latest now.
 */
async function fixVariantVersions(db: Db | Tx, campaignId: string) {
  await sql`update campaigns c set ab_test = jsonb_set(c.ab_test, '{variants}', (
      select jsonb_agg(case when v ? 'template_id' and v ->> 'template_version' is null
               then v || jsonb_build_object('template_version',
                 (select t.latest_version from templates t where t.id = (v ->> 'template_id')::uuid))
               else v end order by i)
        from jsonb_array_elements(c.ab_test -> 'variants') with ordinality as x(v, i)))
     where c.id = ${campaignId} and c.ab_test is not null`.execute(db);
}

/**
 * Writes the campaign's audience into `campaign_recipients` with one INSERT ... SELECT (contacts
 * never pass through Node), giving an A/B campaign's test recipients their variant in the same
 * statement, and sets its `recipient_count`; returns how many rows this run added. Keyed by
 * (campaign, contact): running it again after a crash adds nothing already there.
 */
export async function snapshotAudience(db: Db | Tx, campaign: CampaignAudience): Promise<number> {
  // read here, in the caller's transaction: the settings as they are when sending starts
  const { ab_test: ab, local_time: localTime } = await db
    .selectFrom('campaigns')
    .select(['ab_test', 'local_time'])
    .where('id', '=', campaign.id)
    .executeTakeFirstOrThrow();
  const project = await localTimeOf(db, campaign.project_id);
  const timing: Timing = { start: now(), zone: project.time_zone, localTime, quiet: project.quiet_hours };
  const timed = isTimed(timing) ? { t: timing, fallback: await projectSendAfter(db, timing) } : null;
  const audience = await audienceQuery(db, campaign, timed !== null);
  if (ab) await fixVariantVersions(db, campaign.id);
  const { rows } = await sql<{ added: number }>`with added as (
      insert into campaign_recipients (campaign_id, contact_id, email, variant, send_after)
      ${recipientsOf(campaign.id, audience, ab, timed)}
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

import { sql } from 'kysely';
import type { Db, Tx } from '../../db/database.ts';
import { domainOf } from '../../mail/address.ts';
import { addDays, dayOf, daysBetween, now } from '../core/clock.ts';
import { parseIsoDate } from '../core/dates.ts';
import { ValidationError } from '../core/errors.ts';

/**
 * Warm-up plans (issue 33, item 1): a new sending domain earns mailbox providers' trust by volume
 * that grows day by day. A domain's plan starts on a day and gives a volume for each day from it
 * (its own schedule, or DEFAULT_WARMUP_SCHEDULE); past the last day the plan is done and nothing is
 * capped. Campaigns hold to it: each batch the writer takes is reserved against the day's volume
 * (`warmup_usage`, row-locked, so writers on several nodes never pass it), recipients engaged
 * first; what does not fit waits for the next day. Transactional and flow mail is never held but
 * counts toward the day as it is handed over (deliver.ts). Days are the service's calendar
 * (core/clock.ts), in UTC.
 */

/**
 * The default ramp over 30 days: about doubling in the first week, then growing by a quarter to a
 * third a day (the pace Gmail's and Microsoft's postmaster guidance and the large ESPs' warm-up
 * tables describe for a new domain or address). Messages per day.
 */
export const DEFAULT_WARMUP_SCHEDULE: readonly number[] = [
  50, 100, 150, 250, 400, 600, 900, 1_300, 1_800, 2_500, 3_300, 4_300, 5_500, 7_000, 9_000, 11_000, 13_500,
  16_500, 20_000, 24_000, 29_000, 35_000, 42_000, 50_000, 60_000, 70_000, 80_000, 90_000, 100_000, 120_000,
];

const MAX_DAYS = 365;
const MAX_VOLUME = 100_000_000;

type PlanRow = { warmup_started_on: string | null; warmup_schedule: number[] | null };
type PlanColumns = PlanRow;

/** Today's place in a plan: its day number (1 = the first) and volume; null volume: the plan is done. */
export function planDay(row: PlanRow, today = dayOf(now())) {
  if (!row.warmup_started_on) return null;
  const schedule = row.warmup_schedule ?? DEFAULT_WARMUP_SCHEDULE;
  const day = daysBetween(row.warmup_started_on, today) + 1;
  return {
    day,
    days: schedule.length,
    volume: day >= 1 && day <= schedule.length ? schedule[day - 1] : null,
  };
}

/** The volumes of the plan's days from `today` on (as many as it has left). */
export function daysAhead(row: PlanRow, today = dayOf(now())): { date: string; volume: number }[] {
  const place = planDay(row, today);
  if (!place || place.volume === null) return [];
  const schedule = row.warmup_schedule ?? DEFAULT_WARMUP_SCHEDULE;
  return schedule.slice(place.day - 1).map((volume, i) => ({ date: addDays(today, i), volume }));
}

/**
 * PATCH /domains/{id} `warmup`: `{"enabled": true}` starts the default plan today; `schedule` gives
 * the daily volumes; `start_date` (today or earlier) continues a warm-up begun before;
 * `{"enabled": false}` ends it (nothing capped). Returns the columns to change.
 */
export function warmupChanges(input: unknown, current: PlanRow): Partial<PlanColumns> {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ValidationError(
      '`warmup` must be an object: {"enabled": true, "schedule"?: [...], "start_date"?: "YYYY-MM-DD"}',
    );
  const { enabled, schedule, start_date: start, ...rest } = input as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new ValidationError(`\`warmup\`: unknown field \`${unknown[0]}\``);
  if (enabled !== undefined && typeof enabled !== 'boolean')
    throw new ValidationError('`warmup.enabled` must be true or false');
  if (enabled === false) return { warmup_started_on: null, warmup_schedule: null };
  const changes: Partial<PlanColumns> = {};
  if (schedule !== undefined) changes.warmup_schedule = checkSchedule(schedule);
  const today = dayOf(now());
  if (start !== undefined) {
    if (typeof start !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(start) || !parseIsoDate(start))
      throw new ValidationError('`warmup.start_date` must be a date as YYYY-MM-DD');
    if (daysBetween(start, today) < 0)
      throw new ValidationError(`\`warmup.start_date\` must be today (${today}) or earlier`);
    changes.warmup_started_on = start;
  } else if (!current.warmup_started_on && (enabled === true || schedule !== undefined))
    changes.warmup_started_on = today;
  return changes;
}

function checkSchedule(schedule: unknown): number[] | null {
  if (schedule === null) return null;
  if (!Array.isArray(schedule) || schedule.length === 0 || schedule.length > MAX_DAYS)
    throw new ValidationError(
      `\`warmup.schedule\` must be a list of 1 to ${MAX_DAYS} daily volumes (null: the default)`,
    );
  schedule.forEach((v, i) => {
    if (!Number.isInteger(v) || v < 1 || v > MAX_VOLUME)
      throw new ValidationError(
        `\`warmup.schedule[${i}]\` must be a whole number of messages from 1 to ${MAX_VOLUME}`,
      );
  });
  return schedule as number[];
}

/** The plan as GET /domains/{id} shows it: null when none; else its day, volumes and today's use. */
export async function presentWarmup(db: Db, row: PlanRow & { id: string }) {
  const place = planDay(row);
  if (!place || !row.warmup_started_on) return null;
  const today = dayOf(now());
  const used = await db
    .selectFrom('warmup_usage')
    .select('used')
    .where('domain_id', '=', row.id)
    .where('day', '=', today)
    .executeTakeFirst();
  return {
    started_on: row.warmup_started_on,
    schedule: row.warmup_schedule ?? [...DEFAULT_WARMUP_SCHEDULE],
    default_schedule: row.warmup_schedule === null,
    day: place.day,
    days: place.days,
    finished: place.volume === null,
    today: { date: today, volume: place.volume, used: used?.used ?? 0 },
  };
}

/** A domain's plan for the mail a campaign writes now, or null when nothing is capped. */
export async function activePlan(db: Db | Tx, projectId: string, domain: string) {
  const row = await db
    .selectFrom('domains')
    .select(['id', 'warmup_started_on', 'warmup_schedule'])
    .where('project_id', '=', projectId)
    .where('name', '=', domain.toLowerCase())
    .where('warmup_started_on', 'is not', null)
    .executeTakeFirst();
  const place = row && planDay(row);
  if (!row || !place || place.volume === null) return null;
  return { domainId: row.id, day: dayOf(now()), volume: place.volume, row };
}

/**
 * What is left of today's volume, the day's row locked until the transaction ends (the caller
 * then reserves what it writes with `reserve`): writers of the domain's campaigns take turns.
 */
export async function lockToday(tx: Tx, plan: { domainId: string; day: string; volume: number }) {
  const { rows } = await sql<{ used: number }>`
    insert into warmup_usage as w (domain_id, day, used) values (${plan.domainId}, ${plan.day}, 0)
    on conflict (domain_id, day) do update set used = w.used
    returning used`.execute(tx);
  return Math.max(0, plan.volume - rows[0].used);
}

/** Adds to a day's use (campaign messages as written; other mail as handed over). */
export async function reserve(tx: Tx | Db, uses: { domainId: string; day: string; n: number }[]) {
  if (uses.length === 0) return;
  await sql`
    insert into warmup_usage as w (domain_id, day, used)
    select * from unnest(${uses.map((u) => u.domainId)}::uuid[], ${uses.map((u) => u.day)}::text[],
                         ${uses.map((u) => u.n)}::int[])
    on conflict (domain_id, day) do update set used = w.used + excluded.used`.execute(tx);
}

/**
 * Orders a starting campaign's recipients for a warm-up: engaged (opened, not by a privacy proxy, or
 * clicked a campaign's message in the last 90 days) first, then contacts added in the last 30 days, then the rest.
 */
export async function rankRecipients(tx: Tx, campaignId: string, projectId: string) {
  await sql`
    update campaign_recipients r
       set priority = case
             when exists (select 1 from emails e join email_events ev on ev.email_id = e.id
                           where e.contact_id = r.contact_id and e.campaign_id is not null
                             and e.project_id = ${projectId}
                             and ev.type in ('opened', 'clicked')
                             -- a privacy proxy's fetch (Apple Mail) is no sign of a person
                             and coalesce(ev.detail ->> 'user_agent_class', '') <> 'machine'
                             and ev.created_at > now() - interval '90 days') then 0
             when c.created_at > now() - interval '30 days' then 1
             else 2 end
      from contacts c
     where r.campaign_id = ${campaignId} and c.id = r.contact_id`.execute(tx);
}

/**
 * How a campaign fits its domain's warm-up: today's place in the plan and, for the recipients still
 * to send (`pending`), the days they are planned for: what is left of today, then each day's
 * volume (other mail of the domain on those days takes its share first, so the days are a floor).
 */
export async function campaignWarmup(
  db: Db,
  campaign: { project_id: string; from_address: string | null },
  /** The recipients still to send: counted only when the domain has a plan. */
  pendingOf: () => Promise<number>,
) {
  if (!campaign.from_address) return null;
  const domain = domainOf(campaign.from_address).toLowerCase();
  const plan = await activePlan(db, campaign.project_id, domain);
  if (!plan) return null;
  const pending = await pendingOf();
  const place = planDay(plan.row) as NonNullable<ReturnType<typeof planDay>>;
  const used = await db
    .selectFrom('warmup_usage')
    .select('used')
    .where('domain_id', '=', plan.domainId)
    .where('day', '=', plan.day)
    .executeTakeFirst();
  const days: { date: string; messages: number }[] = [];
  let left = pending;
  for (const [i, ahead] of daysAhead(plan.row).entries()) {
    if (left === 0) break;
    const room = i === 0 ? Math.max(0, ahead.volume - (used?.used ?? 0)) : ahead.volume;
    const messages = Math.min(left, room);
    if (messages > 0) days.push({ date: ahead.date, messages });
    left -= messages;
  }
  return {
    domain,
    day: place.day,
    days: place.days,
    today: { date: plan.day, volume: plan.volume, used: used?.used ?? 0 },
    pending,
    planned_days: days,
    // past the plan's last day nothing is capped: the rest goes then
    after_plan: left,
  };
}

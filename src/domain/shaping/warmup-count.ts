import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { SourceWarmup } from '../../delivery/direct/transport.ts';
import { domainOf } from '../../mail/address.ts';
import { dayOf, msUntilNextDay, now } from '../core/clock.ts';
import { planDay } from './warmup.ts';

/**
 * The mail a warm-up is not asked about (transactional and flow mail: never held) still counts
 * toward its domain's day, as it is handed over: deliver.ts adds it in the transaction that
 * records the outcomes. Which domains are warming up is read at most every CACHE_MS per process
 * (at once in the process that changed a plan), so another node counts such mail of a plan
 * started just now from a few seconds later.
 */

const CACHE_MS = 5_000;

type Plans = Map<string, { id: string; warmup_started_on: string | null; warmup_schedule: number[] | null }>;
const cache = new WeakMap<Db, { at: number; plans: Promise<Plans> }>();

/** The domains with a warm-up plan, by `project:domain`. */
export function warmingDomains(db: Db): Promise<Plans> {
  const hit = cache.get(db);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.plans;
  const plans = db
    .selectFrom('domains')
    .select(['id', 'project_id', 'name', 'warmup_started_on', 'warmup_schedule'])
    .where('warmup_started_on', 'is not', null)
    .execute()
    .then((rows) => new Map(rows.map((r) => [`${r.project_id}:${r.name}`, r])) as Plans);
  cache.set(db, { at: Date.now(), plans });
  plans.catch(() => cache.delete(db));
  return plans;
}

/** A plan started, changed or ended here: this process reads the plans again at once. */
export function forgetWarmingDomains(db: Db): void {
  cache.delete(db);
}

/** What the messages handed over now add to their domains' day (campaign mail was counted when written). */
export function handedOverUses(
  plans: Plans,
  handed: { project_id: string; from_address: string; campaign_id: string | null }[],
) {
  if (plans.size === 0) return [];
  const day = dayOf(now());
  const uses = new Map<string, number>();
  for (const row of handed) {
    if (row.campaign_id !== null) continue;
    const plan = plans.get(`${row.project_id}:${domainOf(row.from_address).toLowerCase()}`);
    if (!plan || planDay(plan, day)?.volume == null) continue;
    uses.set(plan.id, (uses.get(plan.id) ?? 0) + 1);
  }
  return [...uses].map(([domainId, n]) => ({ domainId, day, n }));
}

/**
 * One message from a direct route's source address on `day`: counted when the day's `volume`
 * has room, or whatever the count when `force` (transactional mail: never held, always counted).
 * Shared by every worker process through PostgreSQL. Answers whether it was counted.
 */
export async function takeSourceDay(
  db: Db,
  address: string,
  day: string,
  volume: number,
  force: boolean,
): Promise<boolean> {
  const { rows } = await sql<{ used: number }>`
    insert into warmup_source_usage as w (address, day, used) values (${address}, ${day}, 1)
    on conflict (address, day) do update set used = w.used + 1
     where ${force} or w.used < ${volume}
    returning used`.execute(db);
  if (rows.length === 0) return false;
  // a first message of the day is counted even over a volume below 1 only when forced
  return force || rows[0].used <= volume;
}

export function sourceWarmup(db: Db): SourceWarmup {
  return {
    async take(source, force) {
      if (!source.warmup) return true;
      const today = dayOf(now());
      const place = planDay(
        { warmup_started_on: source.warmup.startedOn, warmup_schedule: source.warmup.schedule },
        today,
      );
      // before its first day, and past its last, the plan holds nothing
      if (!place || place.volume === null || place.day < 1) return true;
      return takeSourceDay(db, source.address, today, place.volume, force);
    },
    untilNextDayMs: msUntilNextDay,
  };
}

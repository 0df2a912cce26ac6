import { setTimeout } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { addJobs, BULK_PRIORITY } from '../../db/enqueue.ts';
import { domainOf } from '../../mail/address.ts';
import type { EmailRow } from './delivery-outcomes.ts';

/**
 * Throttling of marketing and automation mail. A rate (messages per second and per hour, either
 * optional) applies per project (the default of its campaigns), per campaign (an override that
 * replaces the project's) and per sending domain; transactional mail is never throttled.
 *
 * Each bucket is one row of `send_rates` shared by every worker process: its `next_at` is the
 * earliest moment its next message may leave (GCRA with no burst). Messages of a bucket are spaced
 * at least `interval` apart, the interval being the stricter of the two rates (1000 ms / per
 * second, 3,600,000 ms / per hour), so no window of a second or an hour ever holds more than its
 * rate (plus the one message on its edge). A message takes its slot when it is ready to leave, in
 * PostgreSQL's clock under the buckets' row locks, only within HORIZON_MS of now: a delivery job
 * never holds a worker for long, and a message without a slot goes back to the queue for when its
 * bucket has room.
 */

/** How far ahead a delivery job may reserve slots (and so how long it may wait for them). */
export const HORIZON_MS = 1_000;
/** The most the spacing of messages is widened to absorb the jitter of handing them over. */
const JITTER_MS = 5;
/** How late a message may wake for its slot and still take it. */
const LATE_MS = 5;
const MAX_RETAKES = 5;

export interface Rate {
  perSecond: number | null;
  perHour: number | null;
}

/**
 * The spacing between two messages of a bucket, or null for no limit: the stricter of the two
 * rates, widened by a margin (5%, at most JITTER_MS) so that the few milliseconds a hand-over may
 * vary never push one window over the rate where the mail arrives. The rate is a ceiling.
 */
export function intervalMs(rate: Rate): number | null {
  const spacing = Math.max(
    rate.perSecond ? 1000 / rate.perSecond : 0,
    rate.perHour ? 3_600_000 / rate.perHour : 0,
  );
  return spacing > 0 ? spacing + Math.min(spacing * 0.05, JITTER_MS) : null;
}

export interface Bucket {
  key: string;
  intervalMs: number;
}

/**
 * Takes the next slot of every bucket at once, in ONE statement under the buckets' row locks (in
 * key order, so two workers never deadlock): the slot is the latest of the buckets' next times and
 * now (PostgreSQL's clock), and each bucket moves to the slot plus its own interval. A slot beyond
 * `horizonMs` is not taken. Returns the slot (or the moment one will be free) in the local clock.
 */
export async function takeSlot(
  db: Db,
  buckets: Bucket[],
  horizonMs = HORIZON_MS,
): Promise<{ taken: boolean; atMs: number }> {
  const keys = buckets.map((b) => b.key);
  const steps = buckets.map((b) => b.intervalMs);
  const { rows } = await sql<{ taken: boolean; at_ms: number; now_ms: number }>`
    with locked as (
      select bucket, next_at from send_rates where bucket = any(${keys}::text[]) order by bucket for update
    ), slot as (
      select greatest(max(next_at), clock_timestamp()) as at, clock_timestamp() as now from locked
    ), moved as (
      update send_rates s set next_at = slot.at + make_interval(secs => b.step / 1000)
        from slot, unnest(${keys}::text[], ${steps}::float8[]) b(key, step)
       where s.bucket = b.key and slot.at <= slot.now + make_interval(secs => ${horizonMs}::float8 / 1000)
      returning 1
    )
    select exists (select 1 from moved) as taken,
           extract(epoch from slot.at) * 1000 as at_ms, extract(epoch from slot.now) * 1000 as now_ms
      from slot`.execute(db);
  const row = rows[0];
  // the database's clock decides; the caller waits in its own
  return { taken: row.taken, atMs: Date.now() + (Number(row.at_ms) - Number(row.now_ms)) };
}

/** Bucket rows are made once (per process) before their first slot is taken. */
const knownBuckets = new Set<string>();
async function ensureBuckets(db: Db, keys: string[]) {
  const missing = keys.filter((k) => !knownBuckets.has(k));
  if (missing.length === 0) return;
  await sql`insert into send_rates (bucket, next_at) select k, '-infinity' from unnest(${missing}::text[]) k
    on conflict (bucket) do nothing`.execute(db);
  for (const k of missing) knownBuckets.add(k);
}

/** The rates that apply to a set of rows, looked up in one query per kind. */
export interface RateBook {
  projects: Map<string, Rate>;
  campaigns: Map<string, Rate>;
  /** by `project_id:domain name` */
  domains: Map<string, Rate>;
}

const THROTTLED_STREAMS: EmailRow['stream'][] = ['marketing', 'automation'];

const rateOf = (r: { rate_per_second: number | null; rate_per_hour: number | null }): Rate => ({
  perSecond: r.rate_per_second,
  perHour: r.rate_per_hour,
});

/** The rates of the rows' projects, campaigns and sending domains (only those that set one). */
export async function rateBook(
  db: Db,
  rows: Pick<EmailRow, 'project_id' | 'campaign_id'>[],
): Promise<RateBook> {
  const projectIds = [...new Set(rows.map((r) => r.project_id))];
  const campaignIds = [...new Set(rows.flatMap((r) => (r.campaign_id ? [r.campaign_id] : [])))];
  const limited = (t: 'projects' | 'campaigns' | 'domains') =>
    db
      .selectFrom(t)
      .where((eb) => eb.or([eb('rate_per_second', 'is not', null), eb('rate_per_hour', 'is not', null)]));
  const [projects, campaigns, domains] = await Promise.all([
    limited('projects')
      .select(['id', 'rate_per_second', 'rate_per_hour'])
      .where('id', 'in', projectIds)
      .execute(),
    campaignIds.length === 0
      ? []
      : limited('campaigns')
          .select(['id', 'rate_per_second', 'rate_per_hour'])
          .where('id', 'in', campaignIds)
          .execute(),
    limited('domains')
      .select(['project_id', 'name', 'rate_per_second', 'rate_per_hour'])
      .where('project_id', 'in', projectIds)
      .execute(),
  ]);
  return {
    projects: new Map(projects.map((p) => [p.id, rateOf(p)])),
    campaigns: new Map(campaigns.map((c) => [c.id, rateOf(c)])),
    domains: new Map(domains.map((d) => [`${d.project_id}:${d.name.toLowerCase()}`, rateOf(d)])),
  };
}

/**
 * The buckets one row must respect: its campaign's (when the campaign overrides the rate) or else
 * its project's, and its sending domain's. Empty for transactional mail and unthrottled rows.
 */
export function bucketsOf(
  book: RateBook,
  row: Pick<EmailRow, 'stream' | 'project_id' | 'campaign_id' | 'from_address'>,
): Bucket[] {
  if (!THROTTLED_STREAMS.includes(row.stream)) return [];
  const buckets: Bucket[] = [];
  const add = (key: string, rate: Rate | undefined) => {
    const step = rate ? intervalMs(rate) : null;
    if (step !== null) buckets.push({ key, intervalMs: step });
  };
  const campaignRate = row.campaign_id ? book.campaigns.get(row.campaign_id) : undefined;
  if (campaignRate) add(`campaign:${row.campaign_id}`, campaignRate);
  else add(`project:${row.project_id}`, book.projects.get(row.project_id));
  const domain = domainOf(row.from_address).toLowerCase();
  add(`domain:${row.project_id}:${domain}`, book.domains.get(`${row.project_id}:${domain}`));
  return buckets;
}

/** The pace of a campaign's writer: recipients per batch and when the next batch is due. */
export function writerPace(stepMs: number | null, maxBatch: number): { batch: number; aheadMs: number } {
  if (stepMs === null) return { batch: maxBatch, aheadMs: 0 };
  // about five seconds of sending per batch, written a couple of seconds before it is due
  const batch = Math.max(1, Math.min(maxBatch, Math.ceil(5_000 / stepMs)));
  return { batch, aheadMs: Math.max(0, batch * stepMs - 2_000) };
}

/** The strictest spacing a campaign's messages will get (campaign or project rate, and domain). */
export async function campaignStepMs(
  db: Db,
  campaign: { id: string; project_id: string; from_address: string },
): Promise<number | null> {
  const book = await rateBook(db, [{ project_id: campaign.project_id, campaign_id: campaign.id }]);
  const buckets = bucketsOf(book, {
    stream: 'marketing',
    project_id: campaign.project_id,
    campaign_id: campaign.id,
    from_address: campaign.from_address,
  });
  return buckets.length === 0 ? null : Math.max(...buckets.map((b) => b.intervalMs));
}

/**
 * How a throttled message leaves: `null` for a row that is not throttled, else a function that, in
 * its turn, prepares the message (composes it), takes its slot, waits for it and sends it
 * (`leave: true`), or answers `leave: false` when no slot is free within the horizon, or its turn
 * came too late (the row is then handed back). Turns are per process and bucket set: one message
 * at a time (more lanes only for rates faster than a send takes), and a slot is taken only once the
 * message is ready and the previous one has been handed over, so a worker that stalls or a slow
 * first connection takes no slot meanwhile and a late message never bunches with the next ones.
 */
export type Pace =
  | ((
      prepare: () => Promise<void>,
      send: () => Promise<void>,
    ) => Promise<{ leave: true } | { leave: false; atMs: number }>)
  | null;

/** About how long handing one message over takes: a faster rate gets parallel lanes. */
const SEND_MS = 20;
/** The lanes of each bucket set in this process: the tail of each lane's chain of turns. */
const lanes = new Map<string, { tails: Promise<unknown>[]; next: number }>();

/** Runs `fn` in its turn on one of the bucket set's lanes (round robin). */
function inTurn<T>(key: string, stepMs: number, fn: () => Promise<T>): Promise<T> {
  let lane = lanes.get(key);
  if (!lane) {
    lane = {
      tails: Array.from({ length: Math.max(1, Math.ceil(SEND_MS / stepMs)) }, () => Promise.resolve()),
      next: 0,
    };
    lanes.set(key, lane);
  }
  const i = lane.next++ % lane.tails.length;
  const turn = lane.tails[i].then(fn);
  lane.tails[i] = turn.catch(() => {});
  return turn;
}

/** The pace of each claimed row (see Pace); one lookup of the rates for the whole set. */
export async function pacesOf(db: Db, rows: EmailRow[]): Promise<Map<string, Pace>> {
  const paces = new Map<string, Pace>();
  const throttled = rows.filter((r) => THROTTLED_STREAMS.includes(r.stream));
  if (throttled.length === 0) return paces;
  const book = await rateBook(db, throttled);
  const claimedAt = Date.now();
  for (const row of throttled) {
    const buckets = bucketsOf(book, row);
    if (buckets.length === 0) continue;
    const key = buckets.map((b) => `${b.key}/${b.intervalMs}`).join(' ');
    const stepMs = Math.max(...buckets.map((b) => b.intervalMs));
    paces.set(row.id, (prepare, send) =>
      inTurn(key, stepMs, async () => {
        // a message whose turn comes late goes back to the queue: a job never holds a worker long
        if (Date.now() - claimedAt > HORIZON_MS) return { leave: false, atMs: Date.now() + stepMs };
        await prepare();
        await ensureBuckets(
          db,
          buckets.map((b) => b.key),
        );
        // a slot that passed while this process was busy is left empty and another one taken, so a
        // late message never leaves bunched with the next ones (a few re-takes at most)
        for (let attempt = 0; ; attempt++) {
          const slot = await takeSlot(db, buckets);
          if (!slot.taken) return { leave: false, atMs: slot.atMs };
          if (slot.atMs > Date.now()) await setTimeout(slot.atMs - Date.now());
          if (Date.now() - slot.atMs <= LATE_MS || attempt === MAX_RETAKES) {
            await send();
            return { leave: true };
          }
        }
      }),
    );
  }
  return paces;
}

/**
 * Rows that found no slot go back to `queued` (the attempt not counted), with one delivery job
 * for when their buckets have room.
 */
export async function handBack(db: Db, rows: { id: string; atMs: number }[]) {
  if (rows.length === 0) return;
  const at = Math.max(...rows.map((r) => r.atMs));
  await db.transaction().execute(async (tx) => {
    await tx
      .updateTable('emails')
      .set({ status: 'queued', attempts: sql`attempts - 1` })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .where('status', '=', 'sending')
      .execute();
    await addJobs([
      {
        task: 'deliver_email',
        payload: { ids: rows.map((r) => r.id) },
        runAt: new Date(at),
        priority: BULK_PRIORITY,
      },
    ]).execute(tx);
  });
}

import { setTimeout } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { EmailRow } from '../sending/delivery-outcomes.ts';
import {
  type Bucket,
  bucketsOf,
  HORIZON_MS,
  lateAllowanceMs,
  MAX_RETAKES,
  rateBook,
  THROTTLED_STREAMS,
} from './throttle.ts';

/**
 * How throttled messages leave (throttle.ts has the rates and buckets): each process takes its
 * slots of a bucket set in runs, and its messages in turns, one lane or more per bucket set.
 */

/** The most slots one statement takes for a process's messages of one bucket set. */
const MAX_RUN = 32;

/**
 * Takes a run of up to `count` slots of every bucket at once, spaced `spacingMs` apart (at least
 * each bucket's interval), in ONE statement under the buckets' row locks (in key order, so two
 * workers never deadlock): the first slot is the latest of the buckets' next times and now
 * (PostgreSQL's clock), the run stops at `horizonMs` from now, and each bucket moves to the last
 * slot plus its own interval. Returns how many were taken (0 when even the first is beyond the
 * horizon) and the first slot (or the moment one will be free), in the local clock (and, as
 * `dbAtMs`, in the database's).
 */
export async function takeSlots(
  db: Db,
  buckets: Bucket[],
  count = 1,
  spacingMs = Math.max(...buckets.map((b) => b.intervalMs)),
  horizonMs = HORIZON_MS,
): Promise<{ taken: number; atMs: number; dbAtMs: number }> {
  const keys = buckets.map((b) => b.key);
  const steps = buckets.map((b) => b.intervalMs);
  const { rows } = await sql<{ n: number; at_ms: number; now_ms: number }>`
    with locked as (
      select bucket, next_at from send_rates where bucket = any(${keys}::text[]) order by bucket for update
    ), slot as (
      select greatest(max(next_at), clock_timestamp()) as at, clock_timestamp() as now from locked
    ), run as (
      select at, now, greatest(0, least(${count}::int,
               floor((extract(epoch from now - at) * 1000 + ${horizonMs}::float8) / ${spacingMs}::float8) + 1))::int as n
        from slot
    ), moved as (
      update send_rates s set next_at = run.at + make_interval(secs => ((run.n - 1) * ${spacingMs}::float8 + b.step) / 1000)
        from run, unnest(${keys}::text[], ${steps}::float8[]) b(key, step)
       where s.bucket = b.key and run.n >= 1
      returning 1
    )
    select run.n,
           extract(epoch from run.at) * 1000 as at_ms, extract(epoch from run.now) * 1000 as now_ms
      from run`.execute(db);
  const row = rows[0];
  // the database's clock decides; the caller waits in its own
  return {
    taken: row.n,
    atMs: Number(row.at_ms) + clockOffsetMs(Date.now(), Number(row.now_ms)),
    dbAtMs: Number(row.at_ms),
  };
}

/** One caller of a site pacer, waiting for its slot. */
interface SlotWaiter {
  intervalMs: number;
  horizonMs: number;
  resolve: (slot: { taken: boolean; atMs: number }) => void;
  reject: (err: unknown) => void;
}

/**
 * A process's pacer of direct-route sites: one slot of bucket `key` (a slot every `intervalMs`,
 * shared by every worker process) per call, taken when it falls within `horizonMs` (`taken`, with
 * its time in the local clock), else the time the next one is free (DESIGN: limits live in
 * PostgreSQL). The calls for one key that come while its statement is out wait for the next, which
 * takes a run of consecutive slots for all of them (up to MAX_RUN) in one statement: a busy site's
 * messages no longer queue one round trip and one commit each under the bucket's row lock (at 400
 * messages a second, that queue held the process's room for claimed mail). A run is as long as the
 * callers waiting for it, so no slot is taken ahead for a message that is not there.
 */
export function sitePacer(
  db: Db,
): (key: string, intervalMs: number, horizonMs: number) => Promise<{ taken: boolean; atMs: number }> {
  const queues = new Map<string, SlotWaiter[]>();
  const drain = async (key: string, queue: SlotWaiter[]) => {
    while (queue.length > 0) {
      const run = queue.splice(0, MAX_RUN);
      const intervalMs = Math.max(...run.map((w) => w.intervalMs));
      const horizonMs = Math.min(...run.map((w) => w.horizonMs));
      try {
        await ensureBuckets(db, [key]);
        const slots = await takeSlots(db, [{ key, intervalMs }], run.length, intervalMs, horizonMs);
        for (const [i, w] of run.entries())
          w.resolve({ taken: i < slots.taken, atMs: slots.atMs + Math.min(i, slots.taken) * intervalMs });
      } catch (err) {
        for (const w of run) w.reject(err);
      }
    }
    queues.delete(key);
  };
  return (key, intervalMs, horizonMs) =>
    new Promise((resolve, reject) => {
      const queue = queues.get(key);
      if (queue) {
        queue.push({ intervalMs, horizonMs, resolve, reject });
        return;
      }
      const started: SlotWaiter[] = [{ intervalMs, horizonMs, resolve, reject }];
      queues.set(key, started);
      void drain(key, started);
    });
}

/** Samples of (local clock − the database's) kept, and for how long. */
const offsets: { ms: number; at: number }[] = [];
const OFFSET_WINDOW_MS = 10_000;

/**
 * This process's estimate of its clock's lead over the database's: the smallest difference between
 * an answer's arrival and the database's `now` in it over the last ten seconds. Each difference is
 * the true lead plus that answer's way back, so the smallest is the closest; and one estimate for
 * every run keeps the runs of a process on one grid, where converting each run by its own answer
 * shifted a whole run by that answer's delay (a slot's worth under load: one message too many in a
 * second, beside a late wake's).
 */
export function clockOffsetMs(receivedAt: number, dbNowMs: number): number {
  offsets.push({ ms: receivedAt - dbNowMs, at: receivedAt });
  while (offsets.length > 1 && offsets[0].at < receivedAt - OFFSET_WINDOW_MS) offsets.shift();
  let best = offsets[0].ms;
  for (const o of offsets) best = Math.min(best, o.ms);
  return best;
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

/**
 * How a throttled message leaves: `null` for a row that is not throttled, else a function that, in
 * its turn, prepares the message (composes it), takes its slot, waits for it and sends it
 * (`leave: true`), or answers `leave: false` when no slot is free within the horizon, or its turn
 * came too late (the row is then handed back). Turns are per process and bucket set: one message
 * at a time (more lanes only for rates faster than a send takes), and a message takes a slot only
 * once it is ready. The process holds slots for the messages it has waiting (a run, see
 * `nextSlot`), at most a second ahead: a slot that passes while the worker stalls is left empty,
 * so a late message never bunches with the next ones.
 */
export type Pace =
  | ((
      prepare: () => Promise<void>,
      send: () => Promise<void>,
    ) => Promise<{ leave: true } | { leave: false; atMs: number }>)
  | null;

/** What a turn (compose, take the slot, hand over) is taken to last before one has been measured. */
const SEND_MS = 20;
/** The most lanes a bucket set gets in one process. */
const MAX_LANES = 64;
/**
 * The lanes of each bucket set in this process: the tail of each lane's chain of turns, and how
 * long a turn has lasted lately (a moving average). A bucket set gets as many lanes as turns of
 * that length fit in one interval of its rate, so a rate faster than one hand-over is still met
 * when the machine is slow (more lanes) and a slow rate keeps one.
 */
const lanes = new Map<string, { tails: Promise<unknown>[]; next: number; turnMs: number }>();

/** Runs `fn` in its turn on one of the bucket set's lanes (round robin). */
function inTurn<T>(key: string, stepMs: number, fn: (slept: (ms: number) => void) => Promise<T>): Promise<T> {
  let lane = lanes.get(key);
  if (!lane) {
    lane = { tails: [], next: 0, turnMs: SEND_MS };
    lanes.set(key, lane);
  }
  const wanted = Math.min(MAX_LANES, Math.max(1, Math.ceil(lane.turnMs / stepMs)));
  while (lane.tails.length < wanted) lane.tails.push(Promise.resolve());
  const current = lane;
  const i = current.next++ % current.tails.length;
  const turn = current.tails[i].then(async () => {
    const started = performance.now();
    let idle = 0;
    try {
      return await fn((ms) => {
        idle += ms;
      });
    } finally {
      // the turn's work: what it took, less the time it slept until its slot
      current.turnMs = current.turnMs * 0.9 + Math.max(0, performance.now() - started - idle) * 0.1;
    }
  });
  current.tails[i] = turn.catch(() => {});
  return turn;
}

/**
 * The slots this process holds for each bucket set, taken in runs (one statement for the next
 * several messages, as many as are waiting, up to MAX_RUN and the horizon), and how many of its
 * messages wait for one. A slot that passes unused is left empty: the rate stays a ceiling.
 */
const reserves = new Map<
  string,
  { slots: number[]; waiting: number; refill: Promise<number | null> | null }
>();

function reserveOf(key: string) {
  let reserve = reserves.get(key);
  if (!reserve) {
    reserve = { slots: [], waiting: 0, refill: null };
    reserves.set(key, reserve);
  }
  return reserve;
}

/** How far ahead (ms of slots) a process keeps its reserve: below it, the next run is taken in the background. */
const LOW_WATER_MS = 25;

type Reserve = ReturnType<typeof reserveOf>;

/**
 * Takes the next run of slots into the reserve, one run at a time per bucket set: as many as this
 * process has messages waiting beyond those it holds slots for (up to MAX_RUN and the horizon).
 * Resolves with null, or with the moment a slot will be free when none is within the horizon.
 */
function refill(db: Db, reserve: Reserve, buckets: Bucket[], stepMs: number): Promise<number | null> {
  const wanted = Math.min(MAX_RUN, Math.max(1, reserve.waiting - reserve.slots.length));
  reserve.refill ??= takeSlots(db, buckets, wanted, stepMs)
    .then(({ taken, atMs }) => {
      for (let i = 0; i < taken; i++) reserve.slots.push(atMs + i * stepMs);
      return taken > 0 ? null : atMs;
    })
    .finally(() => {
      reserve.refill = null;
    });
  return reserve.refill;
}

/**
 * The next slot of a bucket set for this process (its time in the local clock), from its reserve,
 * or a new run when the reserve holds none that is not already `lateMs` past; or `full` with the
 * moment a slot will be free when none is within the horizon. When the reserve runs low while
 * messages still wait, the next run is taken in the background, so a slow statement does not
 * leave the slots after this run empty.
 */
async function nextSlot(
  db: Db,
  key: string,
  buckets: Bucket[],
  stepMs: number,
  lateMs: number,
): Promise<{ atMs: number } | { full: number }> {
  const reserve = reserveOf(key);
  for (;;) {
    const stale = Date.now() - lateMs;
    while (reserve.slots.length > 0 && reserve.slots[0] < stale) reserve.slots.shift();
    const slot = reserve.slots.shift();
    if (slot !== undefined) {
      const low = reserve.slots.length * stepMs < LOW_WATER_MS;
      if (low && !reserve.refill && reserve.waiting > reserve.slots.length + 1) {
        refill(db, reserve, buckets, stepMs).catch(() => {
          // the message that finds the reserve empty takes the run itself, and hears the error
        });
      }
      return { atMs: slot };
    }
    const full = await refill(db, reserve, buckets, stepMs);
    if (full !== null) return { full };
  }
}

/**
 * The pace of each claimed row (see Pace); one lookup of the rates for the whole set. `more` adds
 * buckets of any stream's rows (a route's rate, which every message through it respects).
 */
export async function pacesOf(
  db: Db,
  rows: EmailRow[],
  more: (row: EmailRow) => Bucket[] = () => [],
): Promise<Map<string, Pace>> {
  const paces = new Map<string, Pace>();
  const throttled = rows.filter((r) => THROTTLED_STREAMS.includes(r.stream));
  const book = throttled.length === 0 ? null : await rateBook(db, throttled);
  const claimedAt = Date.now();
  for (const row of rows) {
    const buckets = [...(book ? bucketsOf(book, row) : []), ...more(row)];
    if (buckets.length === 0) continue;
    const key = buckets.map((b) => `${b.key}/${b.intervalMs}`).join(' ');
    const stepMs = Math.max(...buckets.map((b) => b.intervalMs));
    const lateMs = lateAllowanceMs(stepMs);
    const reserve = reserveOf(key);
    paces.set(row.id, async (prepare, send) => {
      reserve.waiting++;
      try {
        return await inTurn(key, stepMs, async (slept) => {
          // a message whose turn comes late goes back to the queue: a job never holds a worker long
          if (Date.now() - claimedAt > HORIZON_MS) return { leave: false, atMs: Date.now() + stepMs };
          await prepare();
          await ensureBuckets(
            db,
            buckets.map((b) => b.key),
          );
          // a slot that passed while this process was busy is left empty and another one taken, so
          // a late message never leaves bunched with the next ones (a few re-takes at most)
          for (let attempt = 0; ; attempt++) {
            const slot = await nextSlot(db, key, buckets, stepMs, lateMs);
            if ('full' in slot) return { leave: false, atMs: slot.full };
            if (slot.atMs > Date.now()) {
              const wait = slot.atMs - Date.now();
              slept(wait);
              await setTimeout(wait);
            }
            if (Date.now() - slot.atMs <= lateMs || attempt === MAX_RETAKES) {
              await send();
              return { leave: true };
            }
          }
        });
      } finally {
        reserve.waiting--;
      }
    });
  }
  return paces;
}

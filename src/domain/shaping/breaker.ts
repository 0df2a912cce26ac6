import type { Db } from '../../db/database.ts';

/**
 * The circuit breaker (issue 33): what each campaign's mail meets (messages taken, hard bounces,
 * complaints) is judged as it is answered. Past the minimum number of messages, a rate over its
 * warning threshold records a warning; over its stop threshold, the campaign is stopped: this
 * process hands nothing more of it over from that moment, and the same transaction that records
 * the answers pauses it with the reason and takes back what delivery has not claimed. An admin
 * resumes it with a recorded reason (campaigns/actions.ts). Counts live in PostgreSQL
 * (`breaker_counts`), added to by every worker process; each process judges its view of them (the
 * last read, at most SEED_MS old, plus what it met since).
 */

export interface BreakerSettings {
  minMessages: number;
  /** Percentages of the messages judged. */
  bounceWarn: number;
  bounceStop: number;
  complaintWarn: number;
  complaintStop: number;
}

/** What a campaign's mail met: messages taken by the next hop, hard bounces, complaints. */
export interface Tally {
  sent: number;
  bounced: number;
  complained: number;
}

export type Metric = 'hard_bounce_rate' | 'complaint_rate';

/**
 * What the breaker watches: a campaign's mail, a flow's, and the marketing and automation mail of a
 * sending domain and of a project as a whole (their counts over windows of WINDOW_DAYS days).
 */
export type Scope = 'campaign' | 'flow' | 'domain' | 'project';

/** The window a domain's or project's counts are judged over (a campaign or flow: its whole life). */
export const WINDOW_DAYS = 7;

/** A threshold found crossed. */
export interface Trip {
  scope: Scope;
  key: string;
  projectId: string;
  level: 'warn' | 'stop';
  metric: Metric;
  /** Percentages. */
  rate: number;
  threshold: number;
  messages: number;
  reason: string;
}

/** What a process met of one campaign or flow and has not written to breaker_counts. */
export interface Unwritten {
  scope: Scope;
  key: string;
  projectId: string;
  tally: Tally;
}

interface State {
  projectId: string;
  /** The counts as last read from PostgreSQL, what this process met since, and what it has not written yet. */
  base: Tally;
  since: Tally;
  unwritten: Tally;
  seededAt: number;
  stopped: boolean;
  /** Levels and metrics already raised (a warning is raised once). */
  raised: Set<string>;
  /**
   * When this process stopped it, while the transaction writing the trip has not committed (until
   * `confirm`): a read of PostgreSQL then keeps it stopped (for at most PENDING_MS).
   */
  trippedAt: number | null;
}

const SEED_MS = 5_000;
const FORGET_MS = 10 * 60_000;
const PENDING_MS = 60_000;
const zero = (): Tally => ({ sent: 0, bounced: 0, complained: 0 });
const add = (a: Tally, b: Tally) => {
  a.sent += b.sent;
  a.bounced += b.bounced;
  a.complained += b.complained;
};

/** The rates of a tally, in percent: bounces of everything handed over, complaints of what was taken. */
export function ratesOf(t: Tally): { messages: number; hard_bounce_rate: number; complaint_rate: number } {
  const messages = t.sent + t.bounced;
  return {
    messages,
    hard_bounce_rate: messages === 0 ? 0 : (100 * t.bounced) / messages,
    complaint_rate: t.sent === 0 ? 0 : (100 * t.complained) / t.sent,
  };
}

/** The trips a tally calls for, most severe first (pure: tests judge tallies with it). */
export function judge(t: Tally, settings: BreakerSettings): Omit<Trip, 'scope' | 'key' | 'projectId'>[] {
  const rates = ratesOf(t);
  if (rates.messages < settings.minMessages) return [];
  const trips: Omit<Trip, 'scope' | 'key' | 'projectId'>[] = [];
  const check = (metric: Metric, what: string, warn: number, stop: number) => {
    const rate = rates[metric];
    const level = stop > 0 && rate >= stop ? 'stop' : warn > 0 && rate >= warn ? 'warn' : null;
    if (!level) return;
    const threshold = level === 'stop' ? stop : warn;
    trips.push({
      level,
      metric,
      rate,
      threshold,
      messages: rates.messages,
      reason: `${what} reached ${rate.toFixed(2)} % of ${rates.messages} messages (the ${level} threshold is ${threshold} %)`,
    });
  };
  check('complaint_rate', 'complaints', settings.complaintWarn, settings.complaintStop);
  check('hard_bounce_rate', 'hard bounces', settings.bounceWarn, settings.bounceStop);
  return trips.sort((a, b) => (a.level === b.level ? 0 : a.level === 'stop' ? -1 : 1));
}

export class Breaker {
  private readonly states = new Map<string, State>();
  private readonly settings: BreakerSettings;
  private readonly now: () => number;

  constructor(settings: BreakerSettings, now: () => number = Date.now) {
    this.settings = settings;
    this.now = now;
  }

  /** Reads the counts and open stops of these campaigns and flows, unless read in the last SEED_MS. */
  async seed(db: Db, watched: { scope: Scope; id: string; projectId: string }[]): Promise<void> {
    const t = this.now();
    const stale = watched.filter((c) => {
      const s = this.states.get(`${c.scope}:${c.id}`);
      return !s || t - s.seededAt > SEED_MS;
    });
    const ids = [...new Set(stale.map((c) => c.id))];
    if (ids.length === 0) return;
    const [counts, open] = await Promise.all([
      db
        .selectFrom('breaker_counts')
        .select(['scope', 'key', 'sent', 'hard_bounced', 'complained'])
        .where('key', 'in', ids)
        .execute(),
      db
        .selectFrom('breaker_trips')
        .select(['scope', 'key', 'level', 'metric'])
        .where('key', 'in', ids)
        .where('resumed_at', 'is', null)
        .execute(),
    ]);
    for (const c of stale) {
      const id = `${c.scope}:${c.id}`;
      const row = counts.find((r) => r.key === c.id && r.scope === c.scope);
      const prior = this.states.get(id);
      const trips = open.filter((r) => r.key === c.id && r.scope === c.scope);
      const stoppedInDb = trips.some((r) => r.level === 'stop');
      // a stop this process decided whose write the read did not see yet stands
      const pending =
        !stoppedInDb && prior?.trippedAt != null && t - prior.trippedAt < PENDING_MS ? prior : null;
      this.states.set(id, {
        projectId: c.projectId,
        base: row
          ? { sent: Number(row.sent), bounced: Number(row.hard_bounced), complained: Number(row.complained) }
          : zero(),
        // what this process met and has not written is not in the counts read
        since: { ...(prior?.unwritten ?? zero()) },
        unwritten: prior?.unwritten ?? zero(),
        seededAt: t,
        stopped: stoppedInDb || pending !== null,
        raised: new Set([...trips.map((r) => `${r.level}:${r.metric}`), ...(pending?.raised ?? [])]),
        trippedAt: pending?.trippedAt ?? null,
      });
    }
  }

  /** Whether the campaign or flow is stopped: nothing more of it is handed over. */
  stopped(scope: Scope, key: string): boolean {
    return this.states.get(`${scope}:${key}`)?.stopped === true;
  }

  /** Adds what one message met; answers the thresholds it made the campaign or flow cross (none mostly). */
  observe(scope: Scope, key: string, projectId: string, met: Tally): Trip[] {
    const id = `${scope}:${key}`;
    let state = this.states.get(id);
    if (!state) {
      state = {
        projectId,
        base: zero(),
        since: zero(),
        unwritten: zero(),
        seededAt: 0,
        stopped: false,
        raised: new Set(),
        trippedAt: null,
      };
      this.states.set(id, state);
    }
    add(state.since, met);
    add(state.unwritten, met);
    const total = zero();
    add(total, state.base);
    add(total, state.since);
    const trips: Trip[] = [];
    for (const trip of judge(total, this.settings)) {
      const id = `${trip.level}:${trip.metric}`;
      if (state.raised.has(id) || (trip.level === 'warn' && state.stopped)) continue;
      state.raised.add(id);
      if (trip.level === 'stop') {
        state.stopped = true;
        state.trippedAt = this.now();
      }
      trips.push({ scope, key, projectId, ...trip });
    }
    return trips;
  }

  /** What this process met and has not written, per campaign and flow, now counted as written. */
  takeUnwritten(): Unwritten[] {
    const out: Unwritten[] = [];
    const t = this.now();
    for (const [id, state] of this.states) {
      const u = state.unwritten;
      if (u.sent + u.bounced + u.complained === 0) {
        // a campaign this process has not met for a while is read afresh if it comes back
        if (t - state.seededAt > FORGET_MS) this.states.delete(id);
        continue;
      }
      const [scope, key] = id.split(':') as [Scope, string];
      out.push({ scope, key, projectId: state.projectId, tally: { ...u } });
      state.unwritten = zero();
    }
    return out;
  }

  /** The trips' transaction committed: from now on PostgreSQL says whether they stand (a resume ends them). */
  confirm(trips: Trip[]): void {
    for (const trip of trips) {
      const state = this.states.get(`${trip.scope}:${trip.key}`);
      if (state && trip.level === 'stop') state.trippedAt = null;
    }
  }

  /** Puts back what a failed write did not record: the counts, and the trips (raised again at the next answer). */
  giveBack(unwritten: Unwritten[], trips: Trip[]): void {
    for (const { scope, key, tally } of unwritten) {
      const state = this.states.get(`${scope}:${key}`);
      if (state) add(state.unwritten, tally);
    }
    for (const trip of trips) {
      const state = this.states.get(`${trip.scope}:${trip.key}`);
      if (!state) continue;
      state.raised.delete(`${trip.level}:${trip.metric}`);
      if (trip.level === 'stop') {
        state.stopped = false;
        state.trippedAt = null;
      }
    }
  }
}

/** One breaker per worker process and settings. */
const breakers = new Map<BreakerSettings, Breaker>();
export function breakerFor(settings: BreakerSettings): Breaker {
  let breaker = breakers.get(settings);
  if (!breaker) {
    breaker = new Breaker(settings);
    breakers.set(settings, breaker);
  }
  return breaker;
}

import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { claimEmails, releaseClaim } from './claim.ts';
import type { DeliveryDeps } from './hand-over.ts';

/**
 * The delivery scheduler of one worker process (DESIGN: "jobs claim, the scheduler delivers"). A
 * delivery job claims its messages and hands them here, then ends: a job slot never waits on a
 * remote server. The scheduler holds each batch's sessions on the event loop (the routes' pools
 * and a direct route's lanes queue them per route, site and source address, so a slow site costs
 * its own connections, not a worker), records each message's answer as it comes, and keeps the
 * batch's claim alive while it is in flight.
 *
 * What a process holds is bounded twice. Messages claimed and still waiting for a session (for a
 * connection, a pace slot, their render) are at most `maxWaiting`: a job waits for room before it
 * claims, so the backlog stays in PostgreSQL, where a pause or a cancel takes it back and another
 * node may take it. Messages in a session do not count there (a thousand slow sites hold a thousand
 * sockets, not the queue), only toward `maxInFlight`, the memory bound. Marketing and automation
 * may fill only part of either, so transactional and system mail always find room.
 */

export interface SchedulerOptions {
  /** Claimed messages waiting for a session, at most (POSTHORN_DELIVERY_QUEUE). */
  maxWaiting: number;
  /** Claimed messages in all, waiting or in a session, at most (POSTHORN_DELIVERY_IN_FLIGHT). */
  maxInFlight: number;
  /** Claim ids to heartbeat (the worker's liveness set): a batch's id is in it while in flight. */
  heartbeats: Set<string>;
  log: Logger;
}

/** What the scheduler hears of each message of a batch. */
export interface BatchProgress {
  /**
   * The message waits no more in the process's room: a session (or a provider's API call) started
   * for it, or it waits in its site's own bounded queue (a direct route's lane).
   */
  session(id: string): void;
  /** These messages' answers are written (or they went back to the queue): they leave the process. */
  recorded?(ids: string[]): void;
}

/** Delivers claimed rows and records their outcomes; resolves once every one is recorded. */
export type DeliverClaimed = (
  deps: DeliveryDeps,
  rows: Awaited<ReturnType<typeof claimEmails>>,
  progress: BatchProgress,
) => Promise<number>;

/** The share of each bound bulk mail (marketing, automation) may use. */
const BULK_SHARE = 0.8;

export class DeliveryScheduler {
  /** Claimed and not yet in a session. */
  private waitingNow = 0;
  /** Claimed, in all. */
  private inFlight = 0;
  private readonly wakers: (() => void)[] = [];
  private readonly batches = new Set<Promise<unknown>>();
  private stopped = false;
  /** Takes of this turn of the event loop, claimed together at its end. */
  private readonly pending: {
    ids: string[];
    bulk: boolean;
    resolve: (claimed: number) => void;
    reject: (err: unknown) => void;
  }[] = [];
  private flushQueued = false;
  private readonly deps: DeliveryDeps;
  private readonly options: SchedulerOptions;
  private readonly deliver: DeliverClaimed;

  constructor(deps: DeliveryDeps, deliver: DeliverClaimed, options: SchedulerOptions) {
    this.deps = deps;
    this.deliver = deliver;
    this.options = options;
  }

  /** Messages claimed and not yet recorded, and of them those still waiting for a session. */
  get holding(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.waitingNow };
  }

  /**
   * Whether `count` more messages of this kind would pass its share of a bound: a batch counts
   * whole, so bulk mail never overshoots into the room kept for transactional mail (a batch larger
   * than the share passes only into an empty process).
   */
  private full(bulk: boolean, count: number): boolean {
    const share = bulk ? BULK_SHARE : 1;
    const over = (now: number, bound: number) =>
      now > 0 && now + count > Math.max(1, Math.floor(bound * share));
    return over(this.waitingNow, this.options.maxWaiting) || over(this.inFlight, this.options.maxInFlight);
  }

  /**
   * Waits until the process has room for `count` messages of this kind, and takes it in the same
   * turn as the check: jobs woken together never all see the same room.
   */
  private async reserve(bulk: boolean, count: number): Promise<void> {
    while (this.full(bulk, count) && !this.stopped)
      await new Promise<void>((resolve) => this.wakers.push(resolve));
    this.inFlight += count;
    this.waitingNow += count;
  }

  private wake(): void {
    // every waiting job looks again (at most one per job slot waits)
    for (const resolve of this.wakers.splice(0)) resolve();
  }

  /**
   * Claims the messages still waiting among `ids` and starts their delivery; resolves once they are
   * claimed (not sent) with how many were. `bulk`: marketing and automation, which leave room for
   * transactional mail. The takes of one turn of the event loop (the jobs a fetch handed out
   * together: accepted batches, retries that came due together) share one claim and one batch, so
   * their plan and their record are one set of statements instead of one each.
   */
  async take(ids: string[], bulk: boolean): Promise<number> {
    if (ids.length === 0) return 0;
    await this.reserve(bulk, ids.length);
    if (this.stopped) {
      this.settle(ids.length, ids.length);
      throw new Error('the delivery scheduler is stopping: the job runs again');
    }
    return new Promise<number>((resolve, reject) => {
      this.pending.push({ ids, bulk, resolve, reject });
      if (this.flushQueued) return;
      this.flushQueued = true;
      setImmediate(() => this.flush());
    });
  }

  /** The takes of this turn, as one batch per kind (transactional mail never waits in a bulk batch). */
  private flush(): void {
    this.flushQueued = false;
    const takes = this.pending.splice(0);
    if (this.stopped) {
      for (const t of takes) {
        this.settle(t.ids.length, t.ids.length);
        t.reject(new Error('the delivery scheduler is stopping: the job runs again'));
      }
      return;
    }
    for (const bulk of [false, true]) {
      const mine = takes.filter((t) => t.bulk === bulk);
      if (mine.length === 0) continue;
      this.claimAndStart(mine.flatMap((t) => t.ids)).then(
        (claimed) => {
          for (const t of mine) t.resolve(t.ids.filter((id) => claimed.has(id)).length);
        },
        (err) => {
          for (const t of mine) t.reject(err);
        },
      );
    }
  }

  /** Claims `ids` (their room taken) as one batch and starts its delivery; the ids it claimed. */
  private async claimAndStart(ids: string[]): Promise<Set<string>> {
    const claim = `delivery:${randomUUID()}`;
    this.options.heartbeats.add(claim);
    let rows: Awaited<ReturnType<typeof claimEmails>>;
    try {
      rows = await claimEmails(this.deps.ctx.db, ids, claim);
    } catch (err) {
      this.settle(ids.length, ids.length);
      this.options.heartbeats.delete(claim);
      throw err;
    }
    // room for what was not claimed (already delivered, cancelled, or another node's) at once
    this.settle(ids.length - rows.length, ids.length - rows.length);
    if (rows.length === 0) {
      this.options.heartbeats.delete(claim);
      return new Set();
    }
    const waiting = new Set(rows.map((r) => r.id));
    const held = new Set(waiting);
    const progress: BatchProgress = {
      session: (id) => {
        if (waiting.delete(id)) this.settle(0, 1);
      },
      // each group of answers leaves at once: a batch one of whose messages waits on a silent site
      // holds that message, not the room of the others (a tarpit held whole batches for 300 s)
      recorded: (ids) => {
        let done = 0;
        let started = 0;
        for (const id of ids) {
          if (!held.delete(id)) continue;
          done++;
          if (waiting.delete(id)) started++;
        }
        this.settle(done, started);
      },
    };
    const batch = this.deliver(this.deps, rows, progress)
      .then(() => releaseClaim(this.deps.ctx.db, claim))
      .then(
        () => this.options.heartbeats.delete(claim),
        (err) => {
          // the claim lapses with its heartbeat: the messages go back to the queue (claim.ts)
          this.options.heartbeats.delete(claim);
          this.options.log.warn(
            { err, emails: rows.length },
            'a delivery batch could not record its outcomes: its messages are queued again once its claim lapses',
          );
        },
      )
      .finally(() => {
        this.batches.delete(batch);
        this.settle(held.size, waiting.size);
      });
    this.batches.add(batch);
    return new Set(rows.map((r) => r.id));
  }

  /** `done` messages leave the process, `started` of them leave the waiting count. */
  private settle(done: number, started: number): void {
    this.inFlight -= done;
    this.waitingNow -= started;
    this.wake();
  }

  /**
   * Takes no more work and waits up to `graceMs` for the batches in flight; those still going then
   * are left to their claims (queued again by another node once they lapse).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    this.wake();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.batches]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}

import type { Tx } from '../../db/database.ts';
import type { ChosenRoute } from '../../delivery/index.ts';
import type { DomainContext } from '../core/context.ts';
import { sharedDefaultFrom } from '../plans/project-facts.ts';
import type { EmailRow } from '../sending/delivery-outcomes.ts';
import { type Breaker, breakerFor, type Tally, type Trip } from './breaker.ts';
import { writeBreaker } from './breaker-write.ts';
import { type Pace, pacesOf } from './pace.ts';
import { type Bucket, intervalMs } from './throttle.ts';
import { reserve } from './warmup.ts';
import { handedOverUses, warmingDomains } from './warmup-count.ts';
import { sendingDomainIds, type Watched, watchedOf } from './watched.ts';

/**
 * The one answer to "may this message leave now, and if not, until when?" for a claimed batch
 * (issue 46): every limit a message meets on its way out, asked here and counted once.
 *
 * - **Throttles and route rates** (throttle.ts, pace.ts): the project's or campaign's rate, the
 *   sending domain's, and the rate of the route it is meant for, as slots of buckets shared by
 *   every worker process; a message with no slot soon goes back to the queue until its bucket has
 *   room.
 * - **The circuit breaker's stops** (breaker.ts, watched.ts): what a campaign, flow, domain or
 *   project it is part of met, and whether that stopped it; asked at the hand-over.
 * - **Warm-up** (warmup.ts, warmup-count.ts): a domain's day is reserved as its campaign's batch is
 *   written (campaigns/send-batch.ts asks `reserve` here), and what else was handed over is counted
 *   toward the day with the answers; a source address's day is counted as it leaves (a direct
 *   route asks `sourceWarmup`).
 * - **Site paces and connection caps** (leases.ts, and the shared pace buckets): a direct route's
 *   lanes ask them as they open a session or start a transaction (delivery/direct/lanes.ts), through
 *   what the composition root lends the routes.
 */
export interface BatchLimits {
  /** The row's pace (its throttles and its route's rate), or null when nothing limits its rate. */
  pace(row: EmailRow): Pace;
  /** What of the circuit breaker stops the row now (its scope), or null. Asked at the hand-over. */
  stopped(row: EmailRow): Watched | null;
  /** What the row met (taken, hard-bounced, complained), counted toward what it is part of. */
  observe(row: EmailRow, met: Tally): void;
  /**
   * Writes, in the transaction of a group of answers, what the limits counted since the last
   * group: the breaker's counts and trips, the warm-ups' use by `taken` rows. Returns what to call
   * once that transaction committed (`ok`) or failed (`failed`: counted again with the next).
   */
  written(taken: EmailRow[]): Promise<{ write(tx: Tx): Promise<void>; ok(): void; failed(): void }>;
}

/** The limits of a claimed batch: its rates looked up once, the breaker's view seeded once. */
export async function limitsOf(
  ctx: DomainContext,
  rows: EmailRow[],
  routeOf: (row: EmailRow) => ChosenRoute,
): Promise<BatchLimits> {
  const breaker: Breaker = breakerFor(ctx.config.breaker);
  const { holdsTransactional } = ctx.config.breaker;
  const [paces, domainIds] = await Promise.all([
    pacesOf(ctx.db, rows, (row) => routeBuckets(routeOf(row))),
    sendingDomainIds(ctx.db, rows, holdsTransactional),
  ]);
  const watched = new Map(rows.map((row) => [row.id, watchedOf(row, domainIds, holdsTransactional)]));
  await breaker.seed(ctx.db, [...watched.values()].flat());
  const trips: Trip[] = [];
  return {
    pace: (row) => paces.get(row.id) ?? null,
    stopped: (row) => (watched.get(row.id) ?? []).find((w) => breaker.stopped(w.scope, w.id)) ?? null,
    observe(row, met) {
      for (const w of watched.get(row.id) ?? [])
        trips.push(...breaker.observe(w.scope, w.id, w.projectId, met));
    },
    async written(taken) {
      const unwritten = breaker.takeUnwritten();
      const tripped = trips.splice(0);
      // transactional and flow mail handed over counts toward a warm-up's day (never held by it)
      const warmups = handedOverUses(await warmingDomains(ctx.db), taken);
      return {
        write: async (tx) => {
          await writeBreaker(tx, unwritten, tripped, sharedDefaultFrom(ctx));
          await reserve(tx, warmups);
        },
        ok: () => breaker.confirm(tripped),
        failed: () => breaker.giveBack(unwritten, tripped),
      };
    },
  };
}

/**
 * The rate of the route a message is meant for (its first choice), shared by every worker process
 * through the same buckets as the campaign throttles: every stream through the route respects it.
 */
function routeBuckets(route: ChosenRoute): Bucket[] {
  const step = route.rate ? intervalMs(route.rate) : null;
  return step === null ? [] : [{ key: `route:${route.name}`, intervalMs: step }];
}

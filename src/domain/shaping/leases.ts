import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConnectionLeases } from '../../delivery/direct/session.ts';

/**
 * A site's connection cap held across every worker process (DESIGN: limits live in PostgreSQL).
 * Each process notes in `connection_leases` how many connections it holds to each lane; it opens
 * one more only while the live processes' sum is below the cap, the check and the count made under
 * the lane's advisory lock. A connection given back is written soon after (GIVE_WRITE_MS, so the
 * others may open it). Every REFRESH_MS one statement marks all of the process's rows alive; the
 * rows of a process that stopped for LIVE_MS no longer count, so a crash frees its share.
 *
 * Only a take and a give write a row's count, each in turn with the lane's others and with what
 * this process holds at that moment (a refresh that read the counts before a take and wrote them
 * after it left a row one short, and another process opened one over the cap). A write that
 * failed (the database briefly gone) is made again at the next refresh.
 */

const REFRESH_MS = 5_000;
const LIVE_MS = 20_000;
/** How soon a lane's given-back connections are written, gathered: until then the others see more than there is. */
const GIVE_WRITE_MS = 50;

export function connectionLeases(db: Db): ConnectionLeases & { close(): Promise<void> } {
  const holder = `connections:${randomUUID()}`;
  /** What this process holds, by lane: the truth its rows are written from. */
  const held = new Map<string, number>();
  // one write at a time per lane in this process, so each counts what the one before it wrote
  const queues = new Map<string, Promise<unknown>>();
  const serially = <T>(lane: string, work: () => Promise<T>): Promise<T> => {
    const next = (queues.get(lane) ?? Promise.resolve()).then(work, work);
    const settled = next.catch(() => {});
    queues.set(lane, settled);
    void settled.then(() => {
      if (queues.get(lane) === settled) queues.delete(lane);
    });
    return next;
  };
  /** Lanes whose last write failed: written again at the next refresh. */
  const unwritten = new Set<string>();
  /** Writes what this process holds of `lane` now (a row of 0 is removed). */
  const write = (lane: string) =>
    serially(lane, async () => {
      const n = held.get(lane) ?? 0;
      try {
        if (n > 0)
          await sql`insert into connection_leases (lane, holder, n) values (${lane}, ${holder}, ${n})
                      on conflict (lane, holder) do update set n = ${n}, seen_at = now()`.execute(db);
        else {
          await sql`delete from connection_leases where lane = ${lane} and holder = ${holder}`.execute(db);
          if ((held.get(lane) ?? 0) <= 0) held.delete(lane);
        }
        unwritten.delete(lane);
      } catch {
        // the database is briefly unreachable: written again at the next refresh
        unwritten.add(lane);
      }
    });
  const refresh = async () => {
    try {
      await sql`update connection_leases set seen_at = now() where holder = ${holder}`.execute(db);
      await sql`delete from connection_leases where seen_at < now() - make_interval(secs => ${(LIVE_MS * 10) / 1000})`.execute(
        db,
      );
    } catch {
      // the database is briefly unreachable: the next refresh marks the same
    }
    await Promise.all([...unwritten].map(write));
  };
  const timer = setInterval(refresh, REFRESH_MS);
  timer.unref();
  const givenBack = new Set<string>();
  let giveTimer: NodeJS.Timeout | null = null;
  const take = async (lane: string, max: number) => {
    const mine = held.get(lane) ?? 0;
    const taken = await db.transaction().execute(async (tx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${lane}))`.execute(tx);
      const { rows } = await sql<{ others: number }>`
          select coalesce(sum(n), 0)::int as others from connection_leases
           where lane = ${lane} and holder <> ${holder} and seen_at > now() - make_interval(secs => ${LIVE_MS / 1000})`.execute(
        tx,
      );
      if ((rows[0]?.others ?? 0) + mine >= max) return false;
      await sql`insert into connection_leases (lane, holder, n) values (${lane}, ${holder}, ${mine + 1})
                  on conflict (lane, holder) do update set n = ${mine + 1}, seen_at = now()`.execute(tx);
      return true;
    });
    if (taken) held.set(lane, (held.get(lane) ?? 0) + 1);
    return taken;
  };
  return {
    take: (lane, max) => serially(lane, () => take(lane, max)),
    give(lane) {
      held.set(lane, (held.get(lane) ?? 1) - 1);
      // written shortly, gathered with the lane's other gives: until then the others see one more
      // than there is (the safe side)
      givenBack.add(lane);
      giveTimer ??= setTimeout(() => {
        giveTimer = null;
        const lanes = [...givenBack];
        givenBack.clear();
        for (const given of lanes) void write(given);
      }, GIVE_WRITE_MS);
      giveTimer.unref();
    },
    async close() {
      clearInterval(timer);
      if (giveTimer) clearTimeout(giveTimer);
      await db
        .deleteFrom('connection_leases')
        .where('holder', '=', holder)
        .execute()
        .catch(() => {});
    },
  };
}

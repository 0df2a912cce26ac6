import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { ConnectionLeases } from '../../delivery/direct/session.ts';

/**
 * A site's connection cap held across every worker process (DESIGN: limits live in PostgreSQL).
 * Each process notes in `connection_leases` how many connections it holds to each lane; it opens
 * one more only while the live processes' sum is below the cap, the check and the count made under
 * the lane's advisory lock. A process refreshes its rows every REFRESH_MS; the rows of a process
 * that stopped refreshing for LIVE_MS no longer count, so a crash frees its share.
 */

const REFRESH_MS = 5_000;
const LIVE_MS = 20_000;

export function connectionLeases(db: Db): ConnectionLeases & { close(): Promise<void> } {
  const holder = `connections:${randomUUID()}`;
  /** What this process holds, by lane: the truth its rows are refreshed from. */
  const held = new Map<string, number>();
  const refresh = async () => {
    const lanes = [...held].filter(([, n]) => n > 0);
    try {
      await sql`update connection_leases l set n = u.n, seen_at = now()
                  from unnest(${lanes.map(([lane]) => lane)}::text[], ${lanes.map(([, n]) => n)}::int[]) as u(lane, n)
                 where l.lane = u.lane and l.holder = ${holder}`.execute(db);
      await sql`delete from connection_leases
                 where (holder = ${holder} and n <= 0) or seen_at < now() - make_interval(secs => ${(LIVE_MS * 10) / 1000})`.execute(
        db,
      );
      for (const [lane, n] of held) if (n <= 0) held.delete(lane);
    } catch {
      // the database is briefly unreachable: the next refresh writes the same
    }
  };
  const timer = setInterval(refresh, REFRESH_MS);
  timer.unref();
  // one take at a time per lane in this process, so each counts what the one before it took
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
      // written at the next refresh: until then the others see one more than there is (safe side)
    },
    async close() {
      clearInterval(timer);
      await db
        .deleteFrom('connection_leases')
        .where('holder', '=', holder)
        .execute()
        .catch(() => {});
    },
  };
}

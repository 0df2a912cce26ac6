import type pg from 'pg';

/**
 * Crash recovery for jobs. graphile-worker keeps a job locked for hours when its worker dies; every
 * worker here heartbeats, and each one unlocks the jobs of workers that stopped heartbeating (and of
 * workers that never did) once they are `staleSeconds` old, so another node picks them up. The
 * delivery scheduler's claims heartbeat in the same set; `reclaim` queues again the messages of
 * claims that stopped (domain/sending/claim.ts).
 */
export function watchWorkerLiveness(
  ids: Set<string>,
  pool: pg.Pool,
  staleSeconds: number,
  also: { reclaim?: () => Promise<unknown> } = {},
): () => void {
  const interval = Math.max(1000, Math.min(10_000, (staleSeconds * 1000) / 3));
  const tick = async () => {
    try {
      await pool.query(
        `insert into worker_heartbeats (worker_id, seen_at) select unnest($1::text[]), now()
         on conflict (worker_id) do update set seen_at = now()`,
        [[...ids]],
      );
      await pool.query(
        `select graphile_worker.force_unlock_workers(array(
           select distinct j.locked_by from graphile_worker._private_jobs j
            where j.locked_by is not null and j.locked_at < now() - make_interval(secs => $1)
              and not exists (select 1 from worker_heartbeats h
                               where h.worker_id = j.locked_by and h.seen_at > now() - make_interval(secs => $1))))`,
        [staleSeconds],
      );
      await pool.query(
        'delete from worker_heartbeats where seen_at < now() - make_interval(secs => $1 * 10)',
        [staleSeconds],
      );
      await also.reclaim?.();
    } catch {
      // the database is briefly unreachable: try again at the next tick
    }
  };
  void tick();
  const timer = setInterval(tick, interval);
  timer.unref();
  return () => clearInterval(timer);
}

import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { BULK_PRIORITY } from '../../db/enqueue.ts';
import type { EmailRow } from './delivery-outcomes.ts';

/**
 * Claims: a delivery job moves its messages to `sending` under a claim (one row of
 * `delivery_claims` per batch, its id heartbeating in `worker_heartbeats` while the batch is in
 * flight) and hands them to its process's scheduler, then ends; the scheduler holds the sessions.
 * A claim whose process died, or whose outcomes could not be written, stops heartbeating: its
 * messages still in `sending` go back to the queue with a delivery job (`reclaimAbandoned`) and
 * leave again with the same Message-ID (at-least-once).
 */

/**
 * Moves the messages still waiting among `ids` to `sending` under `claim`, counting the attempt,
 * and records the claim, in one statement. A message in `sending` belongs to its claim and is not
 * taken again.
 */
export async function claimEmails(db: Db, ids: string[], claim: string): Promise<EmailRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<EmailRow>`
    with claimed as (
      update emails set status = 'sending', attempts = attempts + 1, updated_at = now()
       where id = any(${ids}::uuid[]) and status in ('queued', 'scheduled', 'deferred')
      returning *
    ), noted as (
      insert into delivery_claims (claim, email_ids)
      select ${claim}, array_agg(id) from claimed having count(*) > 0
    )
    select * from claimed`.execute(db);
  return rows;
}

/** A batch's claim, once every one of its messages is answered (or handed back). */
export async function releaseClaim(db: Db, claim: string): Promise<void> {
  await db.deleteFrom('delivery_claims').where('claim', '=', claim).execute();
}

/** The most lapsed claims one pass takes (the next pass, a few seconds later, takes the rest). */
const RECLAIM_BATCH = 100;

/**
 * Puts back in the queue the messages still `sending` under claims that have not heartbeated for
 * `staleSeconds` (and are at least that old), each with a delivery job of its stream (marketing
 * and automation at their lower priority), and deletes those claims. Claims another node's pass
 * holds are skipped. Returns how many messages were put back.
 */
export async function reclaimAbandoned(db: Db, staleSeconds: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with lapsed as (
      select c.claim, c.email_ids from delivery_claims c
       where c.claimed_at < now() - make_interval(secs => ${staleSeconds})
         and not exists (select 1 from worker_heartbeats h
                          where h.worker_id = c.claim and h.seen_at > now() - make_interval(secs => ${staleSeconds}))
       order by c.claimed_at
       limit ${RECLAIM_BATCH}
       for update skip locked
    ), gone as (
      delete from delivery_claims c using lapsed where c.claim = lapsed.claim
    ), back as (
      update emails e set status = 'queued', updated_at = now()
       where e.id in (select unnest(email_ids) from lapsed) and e.status = 'sending'
      returning e.id, e.stream
    ), jobs as (
      select count(*) from graphile_worker.add_jobs(array(
        select row(case when stream = 'transactional' then 'deliver_transactional' else 'deliver_email' end,
                   json_build_object('ids', array_agg(id)), null, null, 25, null,
                   case when stream = 'transactional' then null else ${BULK_PRIORITY}::int end, null)::graphile_worker.job_spec
          from back group by stream))
    )
    select (select count(*)::int from back) as n, (select * from jobs) as j`.execute(db);
  return rows[0]?.n ?? 0;
}

import { sql } from 'kysely';
import type { Tx } from '../../db/database.ts';

/**
 * Stopping a sending campaign's mail where it stands, inside the transaction that pauses it (by
 * hand, or by the circuit breaker): the batch being written is waited for, and what delivery has
 * not claimed is taken back. Imports nothing of the domain, so delivery's breaker may use it.
 */

/** Recipients one batch of a sending campaign writes (send-batch.ts). */
export const CAMPAIGN_BATCH = 500;

/**
 * Waits, inside the caller's transaction, for a batch of the campaign being written right now: it
 * holds the first pending recipients (`FOR UPDATE SKIP LOCKED`), so locking those rows returns once
 * it has committed, and what it wrote is then visible to the caller's next statement.
 */
export async function waitForWriter(tx: Tx, campaignId: string) {
  await sql`select 1 from campaign_recipients
     where campaign_id = ${campaignId} and status = 'pending'
     order by contact_id limit ${CAMPAIGN_BATCH} for update`.execute(tx);
}

/**
 * Deletes the campaign's emails that delivery has not claimed (their events go with them), puts
 * their recipients back to `pending` and returns their usage to the days it was counted on.
 */
async function takeBackQueued(tx: Tx, campaignId: string, sharedFrom: string) {
  await sql`with held as (
      delete from emails e using campaign_recipients r
       where r.campaign_id = ${campaignId} and r.status = 'queued' and e.id = r.email_id
         and e.status = 'queued'
      returning e.id, e.project_id, e.created_at, e.from_address
    ), back as (
      update campaign_recipients r set status = 'pending', email_id = null
        from held where r.campaign_id = ${campaignId} and r.email_id = held.id
    )
    insert into sending_usage as s (project_id, day, shard, sent, shared_domain_sent)
    select project_id, created_at::date, 0, -count(*), -count(*) filter (where from_address = ${sharedFrom})
      from held group by project_id, created_at::date
    on conflict (project_id, day, shard) do update
      set sent = s.sent + excluded.sent, shared_domain_sent = s.shared_domain_sent + excluded.shared_domain_sent`.execute(
    tx,
  );
}

/** Waits for the writer, then takes back what delivery has not claimed (see both). */
export async function holdCampaign(tx: Tx, campaignId: string, sharedFrom: string) {
  await waitForWriter(tx, campaignId);
  await takeBackQueued(tx, campaignId, sharedFrom);
}

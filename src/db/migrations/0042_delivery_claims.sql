-- The delivery scheduler (src/domain/sending): a delivery job claims its messages (status
-- `sending`) and hands them to its process's scheduler, which holds the SMTP sessions. Each batch
-- claimed is one row here, named by a claim id that heartbeats in worker_heartbeats while the batch
-- is in flight, deleted once its outcomes are written. A row whose claim stopped heartbeating (its
-- process died, or its outcomes could not be written) puts its messages still `sending` back in
-- the queue. Kept apart from `emails`, whose updates stay HOT (no index names a column delivery
-- changes).
create table delivery_claims (
  claim text primary key,
  email_ids uuid[] not null,
  claimed_at timestamptz not null default now()
);
create index delivery_claims_age on delivery_claims (claimed_at);
-- what an earlier version left in `sending` (its job ran it again after a crash) is one lapsed claim
insert into delivery_claims (claim, email_ids, claimed_at)
select 'before-0042', array_agg(id), now() - interval '1 day' from emails where status = 'sending'
having count(*) > 0;

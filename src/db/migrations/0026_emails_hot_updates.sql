-- Delivery changes a message's status twice (claim, outcome); those updates are HOT (no index
-- work) only while no index names `status`, in its columns OR its predicate. 0012's index of
-- scheduled messages by template had `where status = 'scheduled'`, which made every status change
-- write an entry into every index of `emails`. Its replacement names columns an accepted message
-- never changes: messages accepted with a send time and a template (DELETE /templates/{id} reads it
-- and checks their status).
create index emails_template_scheduled on emails (template_id) where template_id is not null and scheduled_at is not null;
drop index emails_scheduled_template;

-- Retention (the hourly maintenance job): what grows without bound is pruned after configurable
-- periods, a few thousand rows per statement, oldest first. Each kind gets an index on its age so
-- a batch reads only what it deletes, never the whole table.

-- append-only logs and attempts: deleted
create index request_logs_created on request_logs (created_at);
create index account_request_logs_created on account_request_logs (created_at);
create index webhook_deliveries_created on webhook_deliveries (created_at);
create index idempotency_keys_created on idempotency_keys (created_at);

-- emails keep their row (status, recipients, events, campaign and flow) and lose their bodies
-- (html, text, template data) and attachment bytes; the partial index holds only the rows still to
-- prune. It covers no column that delivery updates, so status changes stay HOT.
alter table emails add column body_pruned_at timestamptz;
create index emails_body_retention on emails (created_at) where body_pruned_at is null;

-- received mail keeps its parsed form and loses its raw source
alter table inbound_messages add column raw_pruned_at timestamptz;
create index inbound_messages_raw_retention on inbound_messages (created_at) where raw_pruned_at is null;

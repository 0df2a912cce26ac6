-- What a fan-out delivery stands for: a hash of the announcing job, the event within it and the
-- endpoint. A fan-out job that runs again after a crash finds its deliveries there (and their
-- webhook-id, derived from the same hash, stays what it was); attempts logged later have none.
alter table webhook_deliveries add column fanout_key text;
create unique index webhook_deliveries_fanout_key on webhook_deliveries (fanout_key);

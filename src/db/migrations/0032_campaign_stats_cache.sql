-- What a large campaign's page shows once it is sent (issue 30): its stats and its activity over
-- time, counted at most every few seconds rather than on every read (each reads every recipient's
-- email). Written by the read that finds none and by the `campaign_stats_refresh` job a stale read
-- queues; a campaign's row goes with it.
create table campaign_stats_cache (
  campaign_id uuid primary key references campaigns (id) on delete cascade,
  stats jsonb,
  activity jsonb,
  computed_at timestamptz not null default now()
);

-- Sending statistics per UTC day (GET /emails/stats, domain/emails/stats.ts).
--
-- Delivery outcomes of a project by type and time, read from the index alone. Only outcome events
-- have an entry: the accept path's `queued` events (and opens, clicks, ...) evaluate the predicate
-- and nothing else; delivery pays one more index entry per recipient answered.
create index email_events_outcomes on email_events (project_id, type, created_at)
  where type in ('sent', 'delivered', 'bounced', 'complained');

-- The counts of UTC days that are over. Events are appended with created_at = now() and outcome
-- events are never deleted on their own, so a finished day's counts never change: each is counted
-- once from the index above, and only the current day is counted on every read. A cache (unlogged:
-- after a crash it is empty and refilled from email_events on the next read).
create unlogged table email_stats_days (
  project_id uuid not null references projects (id) on delete cascade,
  day date not null,
  sent integer not null,
  delivered integer not null,
  bounced integer not null,
  complained integer not null,
  primary key (project_id, day)
);

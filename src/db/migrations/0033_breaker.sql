-- The circuit breaker (issue 33): what each campaign's mail met (messages taken, hard bounces,
-- complaints), added to by every worker process as it records outcomes, and the breaker's
-- decisions: a threshold crossed (warn or stop), with the rate, the threshold and the messages it
-- was judged on; a stop pauses the campaign, and an admin's resume records who and why.
create table breaker_counts (
  scope text not null check (scope in ('campaign', 'flow')),
  key uuid not null,
  project_id uuid not null references projects (id) on delete cascade,
  sent bigint not null default 0,
  hard_bounced bigint not null default 0,
  complained bigint not null default 0,
  primary key (scope, key)
);

create table breaker_trips (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  scope text not null check (scope in ('campaign', 'flow')),
  key uuid not null,
  level text not null check (level in ('warn', 'stop')),
  metric text not null check (metric in ('hard_bounce_rate', 'complaint_rate')),
  rate numeric not null,
  threshold numeric not null,
  messages bigint not null,
  reason text not null,
  created_at timestamptz not null default now(),
  resumed_at timestamptz,
  resumed_by text,
  resume_reason text
);
-- one open trip per thing, level and metric: a warning is raised once, a stop until resumed
create unique index breaker_trips_open on breaker_trips (scope, key, level, metric) where resumed_at is null;
create index breaker_trips_project on breaker_trips (project_id, created_at desc);

alter table campaigns add column paused_reason text;

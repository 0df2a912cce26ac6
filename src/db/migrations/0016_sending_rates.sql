-- Throttling of marketing and automation mail: a rate (messages per second and per hour) per
-- project (the default of its campaigns), per campaign (an override) and per sending domain, kept
-- as one row per bucket in send_rates and shared by every worker process. Each row holds the
-- bucket's theoretical arrival time (GCRA): the earliest moment its next message may leave.
alter table projects
  add column rate_per_second integer check (rate_per_second > 0),
  add column rate_per_hour integer check (rate_per_hour > 0);
alter table domains
  add column rate_per_second integer check (rate_per_second > 0),
  add column rate_per_hour integer check (rate_per_hour > 0);
alter table campaigns
  add column rate_per_second integer check (rate_per_second > 0),
  add column rate_per_hour integer check (rate_per_hour > 0);

create table send_rates (
  bucket text primary key,
  next_at timestamptz not null
);

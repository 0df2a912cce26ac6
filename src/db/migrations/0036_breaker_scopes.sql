-- The circuit breaker judges sending domains and projects too (issue 33): their counts run over
-- windows of 7 days (window_start: when the current one began; counts start afresh after it).
alter table breaker_counts drop constraint breaker_counts_scope_check;
alter table breaker_counts add constraint breaker_counts_scope_check
  check (scope in ('campaign', 'flow', 'domain', 'project'));
alter table breaker_counts add column window_start timestamptz not null default now();
alter table breaker_trips drop constraint breaker_trips_scope_check;
alter table breaker_trips add constraint breaker_trips_scope_check
  check (scope in ('campaign', 'flow', 'domain', 'project'));

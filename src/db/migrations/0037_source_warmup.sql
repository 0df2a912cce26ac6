-- Warm-up of a direct route's source addresses (issue 33): what each address sent each day of the
-- service's calendar (`YYYY-MM-DD`), shared by every worker process.
create table warmup_source_usage (
  address text not null,
  day text not null,
  used integer not null default 0,
  primary key (address, day)
);

-- A project's time zone and quiet hours (issue 50, build item 4): the zone of contacts whose
-- properties.timezone names none, and the local hours (minutes after midnight; from > to spans
-- midnight) in which no marketing or automation mail leaves (campaigns and flow sends wait for
-- their end). Null quiet hours: none.
alter table projects
  add column time_zone text not null default 'UTC',
  add column quiet_from smallint check (quiet_from between 0 and 1439),
  add column quiet_to smallint check (quiet_to between 0 and 1439),
  add constraint projects_quiet_hours check ((quiet_from is null) = (quiet_to is null));

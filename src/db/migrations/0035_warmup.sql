-- Warm-up plans (issue 33): a sending domain's daily volume ramps from the day its plan started
-- (`YYYY-MM-DD`, by the service's calendar) by its schedule (null: the documented default); what
-- each day used (campaign messages reserved as they are written, other mail counted as it is
-- handed over); and each campaign recipient's place in the order a warm-up sends in (0 engaged in
-- the last 90 days, 1 subscribed in the last 30, 2 the rest).
alter table domains
  add column warmup_started_on text check (warmup_started_on ~ '^\d{4}-\d{2}-\d{2}$'),
  add column warmup_schedule integer[];

create table warmup_usage (
  domain_id uuid not null references domains (id) on delete cascade,
  day text not null,
  used integer not null default 0,
  primary key (domain_id, day)
);

alter table campaign_recipients add column priority smallint not null default 2;
create index campaign_recipients_warmup_pending on campaign_recipients (campaign_id, priority, contact_id)
  where status = 'pending';

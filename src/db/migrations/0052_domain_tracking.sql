-- Open and click tracking per sending domain (issue 51, Resend's `open_tracking` and
-- `click_tracking`): transactional mail sent from the domain carries the open pixel and tracked
-- links when it is on. Campaigns and flows keep their own `tracking`. Off by default, as before.
alter table domains
  add column open_tracking boolean not null default false,
  add column click_tracking boolean not null default false;

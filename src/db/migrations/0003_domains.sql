-- Sending domains: DKIM selector, return-path subdomain, the last check's record statuses.
alter table domains
  add column dkim_selector text,
  add column return_path text not null default 'bounces',
  add column records jsonb not null default '[]',
  add column last_checked_at timestamptz,
  add column failed_at timestamptz;
create index dkim_keys_project_domain on dkim_keys (project_id, domain, created_at desc);

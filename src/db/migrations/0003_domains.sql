-- Sending domains: DKIM selector, return-path subdomain, the last check's record statuses.
alter table domains
  add column dkim_selector text,
  add column next_dkim_selector text, -- a rotated key waiting for its DNS record
  add column return_path text not null default 'bounces',
  add column records jsonb not null default '[]',
  add column last_checked_at timestamptz,
  add column failed_at timestamptz;
create index dkim_keys_project_domain on dkim_keys (project_id, domain, created_at desc);

-- What happened to a domain (verified, failed): the history, and later the webhook source.
create table domain_events (
  id bigint generated always as identity primary key,
  domain_id uuid not null references domains (id) on delete cascade,
  project_id uuid not null,
  type text not null,
  detail jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index domain_events_domain on domain_events (domain_id, id);

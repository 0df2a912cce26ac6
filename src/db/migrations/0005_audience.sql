-- Audience: contacts with consent history, lists, segments, tracked events, imports.
alter table contacts
  add column last_name text,
  add column properties jsonb not null default '{}',
  add column subscribed boolean not null default true,
  add column updated_at timestamptz not null default now();
update contacts set email = lower(email);
drop index contacts_project_email;
-- emails are stored normalised (trimmed, lower case), so one plain unique index serves lookups and upserts
create unique index contacts_project_email on contacts (project_id, email);
create index contacts_project_created on contacts (project_id, created_at desc, id);
create index contacts_properties on contacts using gin (properties jsonb_path_ops);

-- consent is history: every grant or withdrawal is a row, never overwritten
create table contact_consents (
  id bigint generated always as identity primary key,
  contact_id uuid not null references contacts (id) on delete cascade,
  project_id uuid not null,
  status text not null check (status in ('granted', 'withdrawn')),
  source text,
  ip text,
  text_shown text,
  created_at timestamptz not null default now()
);
create index contact_consents_contact on contact_consents (contact_id, id);

create table lists (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, name)
);

create table list_members (
  list_id uuid not null references lists (id) on delete cascade,
  contact_id uuid not null references contacts (id) on delete cascade,
  subscribed boolean not null default true, -- false: unsubscribed from this list only
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (list_id, contact_id)
);
create index list_members_contact on list_members (contact_id);

create table segments (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  description text,
  definition jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, name)
);

-- append-only; the indexes serve the event conditions of segments (index-only scans) and listing
create table events (
  id bigint generated always as identity primary key,
  project_id uuid not null references projects (id) on delete cascade,
  contact_id uuid not null references contacts (id) on delete cascade,
  name text not null,
  properties jsonb not null default '{}',
  value numeric,
  currency text,
  quantity numeric,
  campaign_id uuid,
  flow_id uuid,
  created_at timestamptz not null default now()
);
create index events_project_name_time on events (project_id, name, created_at) include (contact_id, value, currency);
create index events_contact_time on events (contact_id, created_at desc);
create index events_project_time on events (project_id, created_at desc, id desc);

create table imports (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  status text not null default 'queued' check (status in ('queued', 'running', 'completed', 'failed')),
  format text not null check (format in ('csv', 'json')),
  source bytea,                       -- the uploaded file, dropped once imported
  total integer,
  processed integer not null default 0,
  created integer not null default 0,
  updated integer not null default 0,
  skipped integer not null default 0,
  errors jsonb not null default '[]',  -- [{row, error}], the first 1,000
  error_count integer not null default 0,
  failure text,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index imports_project_created on imports (project_id, created_at desc);

-- a timestamp from user data, or null when it is not one (segment conditions on date properties)
create function posthorn_try_timestamptz(value text) returns timestamptz
language plpgsql immutable as $$
begin
  return value::timestamptz;
exception when others then
  return null;
end $$;

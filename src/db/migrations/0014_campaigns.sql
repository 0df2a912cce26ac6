-- Campaigns: a marketing send to lists and segments. The audience is snapshotted into
-- campaign_recipients with one INSERT ... SELECT when sending starts; the primary key
-- (campaign_id, contact_id) makes a re-run after a crash add nothing.
create table campaigns (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  status text not null default 'draft'
    check (status in ('draft', 'scheduled', 'sending', 'sent', 'paused', 'cancelled', 'failed')),
  from_address text,
  from_name text,
  reply_to text,
  subject text,
  preheader text,
  -- content: a template (latest published version when template_version is null) or inline HTML
  template_id uuid,
  template_version integer,
  html text,
  list_ids uuid[] not null default '{}',
  segment_ids uuid[] not null default '{}',
  exclude_list_ids uuid[] not null default '{}',
  exclude_segment_ids uuid[] not null default '{}',
  track_opens boolean not null default true,
  track_clicks boolean not null default true,
  tags jsonb not null default '[]',
  scheduled_at timestamptz,
  recipient_count integer,
  started_at timestamptz,
  finished_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (template_id is null or html is null)
);
create index campaigns_project_created on campaigns (project_id, created_at desc, id);

create table campaign_recipients (
  campaign_id uuid not null references campaigns (id) on delete cascade,
  contact_id uuid not null,
  email text not null,
  status text not null default 'pending',
  email_id uuid,
  primary key (campaign_id, contact_id)
);

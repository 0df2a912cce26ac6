-- Inbound mail: each project receives at <anything>@<inbound_slug>.<POSTHORN_INBOUND_DOMAIN>,
-- and at a verified domain of its own once inbound is enabled on that domain.
alter table projects add column inbound_slug text;
update projects set inbound_slug = substr(md5(random()::text || id::text), 1, 12) where inbound_slug is null;
alter table projects
  alter column inbound_slug set default substr(md5(random()::text || clock_timestamp()::text), 1, 12),
  alter column inbound_slug set not null,
  add constraint projects_inbound_slug unique (inbound_slug);

alter table domains add column inbound_enabled boolean not null default false;

create table inbound_messages (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  mail_from text,
  rcpt_to text[] not null,
  remote_ip text,
  helo text,
  from_header text,
  from_address text,
  to_addresses text[] not null default '{}',
  cc_addresses text[] not null default '{}',
  reply_to text[] not null default '{}',
  subject text,
  message_id text,
  sent_at timestamptz,
  text_body text,
  html text,
  headers jsonb not null default '[]',       -- [[name, value], ...] as received
  auth jsonb not null default '{}',          -- SPF, DKIM, DMARC, ARC results (mailauth)
  spam jsonb not null default '{}',          -- flagged + reasons
  attachments jsonb not null default '[]',   -- metadata; the bytes are in inbound_attachments
  size_bytes integer not null,
  raw bytea not null,
  created_at timestamptz not null default now()
);
create index inbound_messages_project_created on inbound_messages (project_id, created_at desc, id desc);

create table inbound_attachments (
  inbound_id uuid not null references inbound_messages (id) on delete cascade,
  position integer not null,
  content bytea not null,
  primary key (inbound_id, position)
);

-- bounce and complaint reports that came back, kept for inspection (the email's events say what they did)
create table mail_reports (
  id bigint generated always as identity primary key,
  project_id uuid references projects (id) on delete cascade,
  email_id uuid,
  kind text not null check (kind in ('bounce', 'complaint')),
  detail jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index mail_reports_email on mail_reports (email_id);

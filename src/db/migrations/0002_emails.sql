-- Outbound email: messages, their attachments and event timeline, suppressions, idempotency,
-- the shared domain's DKIM key, and worker liveness for crash recovery.

create table emails (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  api_key_id uuid,
  stream text not null check (stream in ('transactional', 'marketing', 'automation')),
  status text not null check (status in ('scheduled', 'queued', 'sending', 'sent', 'delivered', 'deferred',
                                         'bounced', 'complained', 'failed', 'suppressed', 'cancelled')),
  message_id text not null,
  from_header text not null,
  from_address text not null,
  to_addresses text[] not null,
  cc_addresses text[] not null default '{}',
  bcc_addresses text[] not null default '{}',
  reply_to text[] not null default '{}',
  subject text not null,
  html text,
  text_body text,
  headers jsonb not null default '{}',
  tags jsonb not null default '[]',
  attachments jsonb not null default '[]',
  scheduled_at timestamptz,
  size_bytes integer not null default 0,
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_response text,
  sent_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
) with (fillfactor = 70);
-- Delivery updates each row twice (claim, outcome). No index covers a column those updates
-- change, and pages keep free space, so the updates are HOT: no index work per status change.
create index emails_project_created on emails (project_id, created_at desc, id);
create index emails_tags on emails using gin (tags jsonb_path_ops);

create table email_attachments (
  email_id uuid not null references emails (id) on delete cascade,
  position integer not null,
  content bytea not null,
  primary key (email_id, position)
);

create table email_events (
  id bigint generated always as identity primary key,
  email_id uuid not null references emails (id) on delete cascade,
  project_id uuid not null,
  type text not null,
  recipient text,
  detail jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index email_events_email on email_events (email_id, id);

-- Hard bounces and complaints block every stream; unsubscribes block marketing and automation.
create table suppressions (
  project_id uuid not null references projects (id) on delete cascade,
  email text not null,
  reason text not null check (reason in ('hard_bounce', 'complaint', 'unsubscribe', 'manual')),
  source_email_id uuid,
  detail text,
  created_at timestamptz not null default now(),
  primary key (project_id, email)
);

create table idempotency_keys (
  project_id uuid not null references projects (id) on delete cascade,
  key text not null,
  request_hash bytea not null,
  status_code integer,
  response jsonb,
  created_at timestamptz not null default now(),
  primary key (project_id, key)
);

-- Messages per project per day, sharded so concurrent sends do not queue on one row.
alter table sending_usage add column shard smallint not null default 0;
alter table sending_usage drop constraint sending_usage_pkey;
alter table sending_usage add primary key (project_id, day, shard);

-- DKIM keys: the shared domain's (project_id null) now, each sending domain's later.
create table dkim_keys (
  id uuid primary key default gen_random_uuid(),
  project_id uuid references projects (id) on delete cascade,
  domain text not null,
  selector text not null,
  private_key bytea not null, -- encrypted with the server secret
  public_key text not null,
  created_at timestamptz not null default now(),
  unique (domain, selector)
);

-- Worker liveness: jobs locked by a worker that stopped heartbeating are unlocked by the others.
create unlogged table worker_heartbeats (
  worker_id text primary key,
  seen_at timestamptz not null default now()
);

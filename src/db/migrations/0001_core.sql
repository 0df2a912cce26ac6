-- Accounts, workspaces, projects, roles, API keys, sessions, codes, logs.

create table accounts (
  id uuid primary key default gen_random_uuid(),
  email text not null,
  name text not null,
  email_confirmed_at timestamptz,
  terms_accepted_at timestamptz not null,
  created_at timestamptz not null default now()
);
create unique index accounts_email_key on accounts (lower(email));

create table workspaces (
  id uuid primary key default gen_random_uuid(),
  name text not null,
  plan text not null default 'free',
  owner_account_id uuid not null references accounts (id),
  created_at timestamptz not null default now()
);

create table workspace_members (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  account_id uuid not null references accounts (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (workspace_id, account_id)
);
create index workspace_members_account on workspace_members (account_id);

create table projects (
  id uuid primary key default gen_random_uuid(),
  workspace_id uuid not null references workspaces (id) on delete cascade,
  name text not null,
  footer_address text,
  created_at timestamptz not null default now()
);
create index projects_workspace on projects (workspace_id);

create table project_members (
  project_id uuid not null references projects (id) on delete cascade,
  account_id uuid not null references accounts (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (project_id, account_id)
);
create index project_members_account on project_members (account_id);

create table api_keys (
  id uuid primary key default gen_random_uuid(),
  key_id text not null unique,
  account_id uuid not null references accounts (id) on delete cascade,
  project_id uuid references projects (id) on delete cascade,
  scope text not null check (scope in ('project', 'all_access')),
  name text not null,
  secret_hash bytea not null,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  rotated_at timestamptz,
  created_at timestamptz not null default now(),
  check ((scope = 'project') = (project_id is not null))
);
create index api_keys_project on api_keys (project_id);
create index api_keys_account on api_keys (account_id);

create table email_codes (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts (id) on delete cascade,
  purpose text not null check (purpose in ('verify_email', 'login')),
  code_hash bytea not null,
  attempts integer not null default 0,
  expires_at timestamptz not null,
  consumed_at timestamptz,
  created_at timestamptz not null default now()
);
create index email_codes_account on email_codes (account_id, purpose, created_at desc);

create table dashboard_sessions (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts (id) on delete cascade,
  token_hash bytea not null unique,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);

-- Request logs are append-only and written in batches, off the request path.
create table request_logs (
  id bigint generated always as identity primary key,
  api_key_id uuid not null,
  key_name text not null,
  project_id uuid,
  method text not null,
  path text not null,
  status integer not null,
  latency_ms real not null,
  created_at timestamptz not null
);
create index request_logs_key on request_logs (api_key_id, id desc);

create table account_request_logs (like request_logs including all);
create index account_request_logs_key on account_request_logs (api_key_id, id desc);

-- One row per project: the current rate-limit window and its count, shared by every node.
create unlogged table rate_limit_windows (
  project_id uuid primary key,
  window_start bigint not null,
  count integer not null
);

-- The service's own messages (signup and login codes, notices): an outbox row per message.
create table system_emails (
  id uuid primary key default gen_random_uuid(),
  message_id text not null,
  to_address text not null,
  subject text not null,
  raw bytea,
  status text not null default 'queued' check (status in ('queued', 'sent', 'failed')),
  last_error text,
  sent_at timestamptz,
  created_at timestamptz not null default now()
);

-- The dev mailbox: exact bytes of every message that would have left, when no relay is configured.
create table mailbox_messages (
  id uuid primary key default gen_random_uuid(),
  message_id text,
  envelope_from text not null,
  envelope_to text[] not null,
  subject text,
  raw bytea not null,
  created_at timestamptz not null default now()
);
create index mailbox_messages_created on mailbox_messages (created_at desc);

-- Sending domains (records and verification arrive with the domains work).
create table domains (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  status text not null default 'pending',
  verified_at timestamptz,
  created_at timestamptz not null default now(),
  unique (project_id, name)
);

-- Contacts (the audience work adds the rest of the fields).
create table contacts (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  email text not null,
  first_name text,
  created_at timestamptz not null default now()
);
create unique index contacts_project_email on contacts (project_id, lower(email));

-- Messages sent per project per day: the monthly allowance and the shared-domain daily cap read it.
create table sending_usage (
  project_id uuid not null references projects (id) on delete cascade,
  day date not null,
  sent integer not null default 0,
  shared_domain_sent integer not null default 0,
  primary key (project_id, day)
);

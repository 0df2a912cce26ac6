-- The dashboard: passwords, password resets, sign-in throttling, invitations, and what a session
-- list shows. The anti-forgery token is not stored: it is an HMAC of the session token.

-- scrypt$N$r$p$salt$hash (base64); null until the person sets a password.
alter table accounts add column password_hash text;

alter table dashboard_sessions
  add column user_agent text,
  add column ip text,
  add column last_used_at timestamptz not null default now();
create index dashboard_sessions_account on dashboard_sessions (account_id, created_at desc);

-- A forgot-password link: single use, one hour; only the token's hash is kept.
create table password_resets (
  id uuid primary key default gen_random_uuid(),
  account_id uuid not null references accounts (id) on delete cascade,
  token_hash bytea not null unique,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index password_resets_account on password_resets (account_id, created_at desc);

-- Failed sign-ins (password or code), counted per address and per IP over a sliding window.
create table login_failures (
  id bigint generated always as identity primary key,
  email text not null,
  ip text not null,
  created_at timestamptz not null default now()
);
create index login_failures_email on login_failures (email, created_at);
create index login_failures_ip on login_failures (ip, created_at);

-- An invitation to a project: a link valid seven days; only the token's hash is kept.
create table invitations (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  email text not null,
  role text not null check (role in ('owner', 'admin', 'member')),
  token_hash bytea not null unique,
  invited_by uuid references accounts (id) on delete set null,
  expires_at timestamptz not null,
  accepted_at timestamptz,
  accepted_by uuid references accounts (id) on delete set null,
  created_at timestamptz not null default now()
);
-- one pending invitation per address and project: inviting again replaces it
create unique index invitations_pending on invitations (project_id, lower(email)) where accepted_at is null;

-- Browser pairing for the CLI: a short code the person checks in the browser, a poll token the CLI
-- holds (stored hashed), and the key created on authorisation (encrypted, handed out once).
create table pairings (
  id uuid primary key default gen_random_uuid(),
  code text not null unique,
  poll_token_hash bytea not null unique,
  device_name text not null,
  status text not null default 'pending' check (status in ('pending', 'authorized', 'denied', 'expired')),
  account_id uuid references accounts (id) on delete cascade,
  key_enc bytea,
  key_id uuid,
  expires_at timestamptz not null,
  last_polled_at timestamptz,
  created_at timestamptz not null default now()
);

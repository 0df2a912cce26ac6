-- Webhook endpoints (signing secrets encrypted at rest) and every delivery attempt.
create table webhook_endpoints (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  url text not null,
  events text[] not null,
  description text,
  enabled boolean not null default true,
  secret_enc bytea not null,
  previous_secret_enc bytea,          -- still signs until previous_expires_at (rotation overlap)
  previous_expires_at timestamptz,
  failing_since timestamptz,
  disabled_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_endpoints_project on webhook_endpoints (project_id, created_at);

create table webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
  project_id uuid not null,
  message_id text not null,           -- the webhook-id header: the same for every attempt
  event_type text not null,
  payload jsonb not null,
  attempt integer not null default 0,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  status_code integer,
  latency_ms integer,
  response_excerpt text,
  error text,
  next_retry_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, created_at desc, id);

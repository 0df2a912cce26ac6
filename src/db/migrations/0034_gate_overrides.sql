-- The bulk-sender gate (issue 33): a campaign or flow sent although its checks failed, by a
-- project admin who said why; the failures as they were then (id and message of each check).
create table gate_overrides (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  scope text not null check (scope in ('campaign', 'flow')),
  key uuid not null,
  overridden_by text not null,
  reason text not null,
  failures jsonb not null,
  created_at timestamptz not null default now()
);
create index gate_overrides_key on gate_overrides (scope, key, created_at desc);

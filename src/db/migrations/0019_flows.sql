-- Flows (journeys): a trigger enrols contacts, who then pass through steps (send, wait,
-- wait_for_event, branch, update_contact, webhook, exit). A flow's definition is versioned:
-- editing an active flow publishes a new version, and each enrollment keeps the version it
-- started on. Timers are rows: an active enrollment with `wake_at` is advanced by the engine when
-- that moment comes, set-based, in batches (no job per sleeping enrollment).
create table flows (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  status text not null default 'draft' check (status in ('draft', 'active', 'paused', 'archived')),
  from_address text,
  from_name text,
  -- the version new enrollments start on (the latest)
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index flows_project_created on flows (project_id, created_at desc, id);
-- the audience subscriber looks up a project's active flows by trigger on every event
create index flows_project_active on flows (project_id) where status = 'active';

create table flow_versions (
  flow_id uuid not null references flows (id) on delete cascade,
  version integer not null,
  -- {trigger, reentry, goal, steps} in the normalised form of domain/flows/definition.ts
  definition jsonb not null,
  created_at timestamptz not null default now(),
  primary key (flow_id, version)
);

create table flow_enrollments (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  flow_id uuid not null references flows (id) on delete cascade,
  version integer not null,
  contact_id uuid not null references contacts (id) on delete cascade,
  status text not null default 'active'
    check (status in ('active', 'completed', 'exited', 'failed', 'cancelled')),
  -- the step the enrollment is at (null once finished)
  step_id text,
  -- when the engine next looks at it: now for a new one, the end of a wait, a wait_for_event's timeout
  wake_at timestamptz,
  -- a wait_for_event's {event, where}: a matching tracked event advances it by the event edge
  waiting_for jsonb,
  exit_reason text,
  converted_at timestamptz,
  -- [{step_id, type, at, outcome, email_id?}], appended as the enrollment moves
  history jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);
create index flow_enrollments_due on flow_enrollments (wake_at) where status = 'active' and wake_at is not null;
create index flow_enrollments_flow on flow_enrollments (flow_id, created_at desc, id);
create index flow_enrollments_contact on flow_enrollments (contact_id, flow_id) where status = 'active';
-- re-entry policies look for a contact's earlier enrollments in a flow
create index flow_enrollments_flow_contact on flow_enrollments (flow_id, contact_id, created_at desc);

-- one message per enrollment and send step: the engine's guard against a second send after a crash
create table flow_step_sends (
  enrollment_id uuid not null references flow_enrollments (id) on delete cascade,
  step_id text not null,
  email_id uuid not null,
  primary key (enrollment_id, step_id)
);

-- a flow's messages name their flow and step (stats, tags, Feedback-ID)
alter table emails
  add column flow_id uuid,
  add column flow_step text;

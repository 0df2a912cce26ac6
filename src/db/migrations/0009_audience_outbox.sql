-- Announcements of tracked events (and of the contacts they create), written by the same statement
-- as the events themselves; the `audience_outbox` job moves them into `audience_event` jobs in
-- batches, merged per type and project. A busy event stream thereby costs one small insert per
-- write instead of a graphile-worker job (and its NOTIFY) per write.
create table audience_outbox (
  id bigint generated always as identity primary key,
  event jsonb not null, -- an audience event: {type, project_id, event_ids | contact_ids}
  created_at timestamptz not null default now()
);

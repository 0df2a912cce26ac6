-- Images in Posthorn (issue 49, build item 2): what a project uploaded, kept in the store the
-- operator chose (a folder under the data directory, or an S3-compatible bucket). `key` is where the
-- image lives in that store and its public path under {public_url}/assets/ (the project's short id
-- and an unguessable name); `preview_key` its resized preview. The bytes count both against the
-- project's quota.
create table assets (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  key text not null unique,
  preview_key text not null unique,
  filename text,
  content_type text not null,
  bytes integer not null,
  preview_bytes integer not null,
  width integer not null,
  height integer not null,
  created_by text,
  created_at timestamptz not null default now()
);
-- a project's library, newest first, and its quota's sum
create index assets_project on assets (project_id, created_at desc, id);

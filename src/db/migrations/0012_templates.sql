-- Templates: a draft that edits change, and immutable published versions. Each keeps its source
-- (MJML or HTML, with Liquid inside) and the HTML that MJML compiled once, with the Liquid left in,
-- so a send only renders Liquid.
create table templates (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  subject text not null,
  mjml text,
  html text,
  text_body text,
  preheader text,
  from_address text,
  reply_to text,
  variables jsonb not null default '[]',
  compiled_html text not null,
  latest_version integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((mjml is null) <> (html is null))
);
create unique index templates_project_name on templates (project_id, lower(name));

-- versions outlive a deleted template: they are the record of what accepted emails render from
-- (a queued or deferred email still leaves with its version; GET /emails/{id} still shows it)
create table template_versions (
  template_id uuid not null,
  version integer not null,
  project_id uuid not null references projects (id) on delete cascade,
  subject text not null,
  mjml text,
  html text,
  text_body text,
  preheader text,
  from_address text,
  reply_to text,
  variables jsonb not null,
  compiled_html text not null,
  published_at timestamptz not null default now(),
  primary key (template_id, version)
);

-- what an email is rendered from (shown by GET /emails/{id}): the published version and the data
-- it was checked with at acceptance (resolved variables, the contact as it was). Its HTML and text
-- are rendered again from these when it is delivered or read, instead of storing some 20 KB of
-- rendered HTML per message: the same bytes, at a fraction of the writes (and the only way a
-- million-recipient campaign fits). A template in use by a scheduled email cannot be deleted.
alter table emails
  add column template_id uuid,
  add column template_version integer,
  add column template_data jsonb;
create index emails_scheduled_template on emails (template_id) where status = 'scheduled' and template_id is not null;

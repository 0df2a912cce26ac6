-- Topics (issue "Topics and a preference center"): what kinds of mail a project sends, each with a
-- default for contacts who never chose (opt_in: they get it; opt_out: only those who opted in) and
-- whether readers see it on the preference page. A contact's choices are rows of contact_topics;
-- no row means the topic's default. Each change is also a row of the contact's consent history,
-- naming its topic.
create table topics (
  id uuid primary key default gen_random_uuid(),
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  description text,
  default_subscription text not null check (default_subscription in ('opt_in', 'opt_out')),
  visibility text not null default 'public' check (visibility in ('public', 'private')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, name)
);

create table contact_topics (
  contact_id uuid not null references contacts (id) on delete cascade,
  topic_id uuid not null references topics (id) on delete cascade,
  subscribed boolean not null,
  updated_at timestamptz not null default now(),
  primary key (contact_id, topic_id)
);
-- a topic's explicit choices (audience counts, segments by topic)
create index contact_topics_topic on contact_topics (topic_id, subscribed, contact_id);

alter table contact_consents add column topic_id uuid references topics (id) on delete set null;

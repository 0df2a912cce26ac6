-- Each worker process's view of its routes (issue 31): health and traffic, for GET /v1/admin/routes
-- and `posthorn admin routes`. One row per route and process (node: host and pid), written when the
-- route's health changes and every few seconds while mail flows through it. A stopped process's
-- rows stay, their updated_at telling when it last spoke.
create table route_status (
  route text not null,
  node text not null,
  healthy boolean not null default true,
  failures int not null default 0,
  ambiguous bigint not null default 0,
  taken bigint not null default 0,
  not_taken bigint not null default 0,
  last_error text,
  changed_at timestamptz,
  started_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (route, node)
);

-- DMARC aggregate and SMTP TLS reports received at Posthorn's MX (issue 34): each report once per
-- reporter and report id (a duplicate is ignored), with what it says; one that could not be read
-- is kept with the reason and its bytes, never dropped.
create table dmarc_reports (
  id uuid primary key default gen_random_uuid(),
  domain_id uuid not null references domains (id) on delete cascade,
  kind text not null check (kind in ('aggregate', 'tls', 'unreadable')),
  reporter text,
  reporter_email text,
  report_id text,
  begin_at timestamptz,
  end_at timestamptz,
  policy jsonb,
  total bigint not null default 0,
  file text,
  reason text,
  raw bytea,
  received_at timestamptz not null default now()
);
create unique index dmarc_reports_once on dmarc_reports (domain_id, kind, reporter, report_id)
  where kind <> 'unreadable';
create index dmarc_reports_domain on dmarc_reports (domain_id, received_at desc);

create table dmarc_records (
  report_id uuid not null references dmarc_reports (id) on delete cascade,
  domain_id uuid not null references domains (id) on delete cascade,
  day date not null,
  source_ip text not null,
  count bigint not null,
  disposition text,
  dkim text,
  spf text,
  aligned boolean not null,
  header_from text,
  envelope_from text,
  auth jsonb not null
);
create index dmarc_records_domain on dmarc_records (domain_id, day);

create table tls_report_results (
  report_id uuid not null references dmarc_reports (id) on delete cascade,
  domain_id uuid not null references domains (id) on delete cascade,
  day date not null,
  policy_type text not null,
  policy_domain text not null,
  mx_host text,
  successful bigint not null,
  failed bigint not null,
  failures jsonb not null
);
create index tls_report_results_domain on tls_report_results (domain_id, day);

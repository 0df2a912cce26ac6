-- What a person says of the sources in a domain's DMARC reports, and what Posthorn announced of
-- them (issue 34): a label for an address or network that sends as the domain ("our CRM"), and
-- each webhook alert once: an unknown source with volume (keyed by its address) and a day whose
-- known sources' alignment dropped (keyed by the day).
create table dmarc_source_labels (
  id uuid primary key default gen_random_uuid(),
  domain_id uuid not null references domains (id) on delete cascade,
  source cidr not null,
  label text not null,
  created_at timestamptz not null default now(),
  unique (domain_id, source)
);

create table dmarc_alerts (
  id uuid primary key default gen_random_uuid(),
  domain_id uuid not null references domains (id) on delete cascade,
  kind text not null check (kind in ('unknown_source', 'alignment_dropped')),
  key text not null,
  detail jsonb not null,
  created_at timestamptz not null default now(),
  unique (domain_id, kind, key)
);

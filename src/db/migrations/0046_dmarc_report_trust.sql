-- Who sent a DMARC or TLS report, and whether its mail proved it (issue 47): the report addresses
-- are public, so anyone can mail one. reporter_domain is the domain of the report mail's From;
-- authenticated says the mail passed DMARC for it. Only authenticated reports count toward the
-- policy coach and the alerts; the others are shown apart. Reports received before this version
-- were never checked: they stay unauthenticated.
alter table dmarc_reports
  add column reporter_domain text,
  add column authenticated boolean not null default false;

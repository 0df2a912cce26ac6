-- How an endpoint's deliveries are written (issue 35): Posthorn's events, or Resend's names and
-- data for an endpoint made through the Resend-compatible door, so a receiver written for Resend
-- reads them unchanged.
alter table webhook_endpoints
  add column dialect text not null default 'posthorn' check (dialect in ('posthorn', 'resend'));

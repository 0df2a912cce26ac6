-- The service's own mail takes the send path of every other message: a temporary failure is
-- `deferred` and tried again on the delivery schedule (attempts, next try), a refusal or a bounce
-- that comes back to its VERP address makes it `bounced`, a complaint `complained`.
alter table system_emails drop constraint system_emails_status_check;
alter table system_emails
  add constraint system_emails_status_check
    check (status in ('queued', 'deferred', 'sent', 'bounced', 'complained', 'failed')),
  add column attempts integer not null default 0,
  add column next_attempt_at timestamptz;

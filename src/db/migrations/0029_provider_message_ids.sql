-- The provider's id of each message it accepted is on the email's sent event
-- (detail.provider_message_id); its feedback finds the email by it. Partial: only such events.
create index email_events_provider_message on email_events ((detail ->> 'provider_message_id'))
  where detail ? 'provider_message_id';

-- The service's own mail keeps it on its row.
alter table system_emails add column provider_message_id text;
create index system_emails_provider_message on system_emails (provider_message_id)
  where provider_message_id is not null;

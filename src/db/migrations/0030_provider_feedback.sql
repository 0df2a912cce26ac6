-- Feedback from the providers mail leaves through (Amazon SES's Delivery, Bounce, Complaint, ...
-- notifications, by SNS). Each notification is kept once (SNS may deliver one twice), with what it
-- did: applied to its email, unmatched (no email of ours has that provider message id), ignored
-- (an event that changes nothing), or a subscription confirmed or not.
create table provider_feedback (
  id bigint generated always as identity primary key,
  provider text not null check (provider in ('ses')),
  -- the notification's own id (SNS's MessageId): the same one twice is recorded once
  notification_id text not null,
  -- SNS's Type (Notification, SubscriptionConfirmation, UnsubscribeConfirmation)
  type text not null,
  -- SES's event type (Bounce, Complaint, Delivery, DeliveryDelay, Reject, ...); null for a subscription
  kind text,
  outcome text not null check (outcome in ('applied', 'unmatched', 'ignored', 'confirmed', 'not_confirmed')),
  provider_message_id text,
  email_id uuid,
  system_email_id uuid,
  project_id uuid references projects (id) on delete cascade,
  topic_arn text,
  detail jsonb not null,
  created_at timestamptz not null default now(),
  unique (provider, notification_id)
);
create index provider_feedback_email on provider_feedback (email_id) where email_id is not null;

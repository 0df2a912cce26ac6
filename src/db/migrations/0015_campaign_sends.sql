-- Campaign sends: each recipient's email names its campaign (Feedback-ID, stats) and carries the
-- campaign's tracking choice, read by the marketing layer when the message is composed. Defaults
-- keep transactional rows as they are; no index on campaign_id (the accept path must not pay for
-- one: campaign stats read through campaign_recipients.email_id).
alter table emails
  add column track_opens boolean not null default false,
  add column track_clicks boolean not null default false,
  add column campaign_id uuid;

-- the send job takes pending recipients in batches; the finish check counts those not yet final
create index campaign_recipients_pending on campaign_recipients (campaign_id, contact_id)
  where status = 'pending';

-- Campaigns at each recipient's local time, and quiet hours for campaigns (issue 50, build item 4).
-- campaigns.local_time: minutes after midnight at which each recipient's message leaves, in the
-- recipient's zone (properties.timezone, else the project's); null: as soon as sending reaches it.
-- campaign_recipients.send_after: when the recipient's message may be written, set by the snapshot
-- for a campaign at local time or of a project with quiet hours (null: at once). The writer takes
-- due recipients through the partial index below, in send_after order, and the campaign's page
-- counts those still waiting per instant from it.
alter table campaigns add column local_time smallint check (local_time between 0 and 1439);
alter table campaign_recipients add column send_after timestamptz;
create index campaign_recipients_waiting on campaign_recipients (campaign_id, send_after, contact_id)
  where status = 'pending' and send_after is not null;

-- Campaign A/B tests, stats and revenue attribution.
--
-- A/B: the test's settings (variants, test share, rule, wait) are one jsonb value on the campaign;
-- the snapshot gives each test recipient its variant (0-based index into ab_test->'variants'),
-- the rest keep null and get the winner's content. ab_winner_due_at is set when every test
-- recipient's email is written: the moment the winner is picked (by rule) or may be picked (manual).
alter table campaigns
  add column ab_test jsonb,
  add column winner_variant smallint,
  add column ab_winner_due_at timestamptz;
alter table campaign_recipients add column variant smallint;

-- the writer takes the test recipients first; only A/B recipients have entries
create index campaign_recipients_test_pending on campaign_recipients (campaign_id, contact_id)
  where status = 'pending' and variant is not null;

-- Stats: per email, the human opens and clicks and the unsubscribes, read from the index alone
-- (machine fetches, flagged by the engagement door, are not in it; neither are delivery events).
create index email_events_engagement on email_events (email_id, type) include (created_at)
  where type = 'unsubscribed'
     or (type in ('opened', 'clicked') and detail ->> 'user_agent_class' = 'human');

-- Revenue attribution: a contact's campaign emails (only campaign rows pay for this entry; the
-- transactional accept path evaluates the predicate and nothing else).
create index emails_campaign_contact on emails (contact_id) include (id, campaign_id) where campaign_id is not null;

-- Revenue per campaign (stats, A/B by revenue): only attributed events have an entry.
create index events_campaign on events (campaign_id) include (contact_id, value, currency)
  where campaign_id is not null;

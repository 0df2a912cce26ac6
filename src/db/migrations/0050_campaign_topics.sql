-- Campaigns for a topic (issue "Topics and a preference center"): a campaign may name a topic of
-- its project; then only contacts subscribed to it (by choice, or by the topic's default) are in
-- its audience, and its one-click unsubscribe leaves that topic only. No foreign key, as with the
-- campaign's lists and segments: a topic deleted since counts as one nobody is subscribed to (the
-- campaign reaches no one, and saving it again asks for another topic or none), rather than the
-- campaign silently going to everyone.
alter table campaigns add column topic_id uuid;

-- The contact a marketing or automation email goes to (campaigns and flows set it; transactional
-- mail leaves it null). Its unsubscribe link names this contact, and opens and clicks are the
-- contact's engagement. No foreign key and no index: the accept path inserts emails at thousands
-- a second and must not pay for a check or an index entry here; the unsubscribe door checks that
-- the contact still exists in the email's project.
alter table emails add column contact_id uuid;

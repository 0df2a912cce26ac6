-- The emails log's recipient filter (GET /emails?to=) through an index instead of reading every
-- message of the project: each message's bare addresses (To, Cc and Bcc, lower case, the part in
-- <...> when there is a display name), written by the accept (domain/emails/write.ts), in a GIN
-- index. The addresses never change after acceptance, so delivery's status updates stay HOT.
-- Existing messages get theirs here, once (on a large table this migration takes a while).
alter table emails add column recipients text[];
update emails set recipients = (
  select coalesce(array_agg(lower(trim(coalesce(substring(a from '<([^<>]*)>\s*$'), a)))), '{}')
    from unnest(to_addresses || cc_addresses || bcc_addresses) a);
create index emails_recipients on emails using gin (recipients);

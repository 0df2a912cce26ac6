-- An endpoint's delivery log read by message (the Resend door's webhook events, issue 51): each
-- message's first and latest attempt are found by (endpoint_id, message_id, created_at). Without
-- this index each lookup read every earlier row of the endpoint, so a page of an endpoint with a
-- long log cost a scan per message listed.
create index webhook_deliveries_message on webhook_deliveries (endpoint_id, message_id, created_at, id);

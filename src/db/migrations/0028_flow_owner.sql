-- Flows whose webhook steps send contacts' records out: the account that last created, changed or
-- activated them (needing the role webhooks need), so that when it leaves the project or loses the
-- role its flows stop (paused, with the reason). No foreign key: a deleted account must not delete
-- or silently keep running what it set up; the membership check finds it gone either way.
alter table flows
  add column webhook_owner_id uuid,
  add column status_reason text;

-- Values for a template's variables, given beside `template_id` (checked when saved and at the start).
alter table campaigns add column template_variables jsonb;

-- Why a recipient got no message (its content could not be rendered for it): the campaign's
-- failure reason when every recipient fails.
alter table campaign_recipients add column reason text;

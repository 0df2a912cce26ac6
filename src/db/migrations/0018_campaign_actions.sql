-- Campaign actions (schedule, pause, resume, cancel, test): a scheduled campaign whose checks fail
-- when its time comes (footer, sender, audience, allowance) becomes `failed`, and says why here.
alter table campaigns add column failure_reason text;

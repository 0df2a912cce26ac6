-- Retention prunes providers' feedback notifications oldest first (POSTHORN_RETENTION_PROVIDER_FEEDBACK_DAYS),
-- on an index of their age as every other pruned kind.
create index provider_feedback_created on provider_feedback (created_at);

-- Who made each API key. A project key made by an Owner or Admin keeps working for the project
-- whoever made it; removing a member from a project revokes the keys they made there unless the
-- remover keeps them (domain/keys/creators.ts), which needs the maker recorded apart from the key's
-- owning account. Kept when that account is deleted (null: made by an account that no longer exists).
alter table api_keys add column created_by uuid references accounts (id) on delete set null;
update api_keys set created_by = account_id;
create index api_keys_created_by on api_keys (created_by, project_id) where revoked_at is null;

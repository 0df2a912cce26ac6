-- An import's choices of topics (issue 50, build item 1): [{id, subscription}] given with the upload,
-- applied to every contact it creates or updates, each change recorded as the import's consent.
alter table imports add column topics jsonb not null default '[]';

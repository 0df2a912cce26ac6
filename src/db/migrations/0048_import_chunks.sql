-- A CSV import's file in pieces of 1 MiB (issue 48: an import of a million rows with memory
-- bounded): the upload is written piece by piece as it arrives and the import job reads one piece
-- at a time, so neither holds the whole file. The pieces go once the import completes. The
-- pieces are stored uncompressed: compressing a megabyte per piece costs more time than it saves.
create table import_chunks (
  import_id uuid not null references imports (id) on delete cascade,
  seq int not null,
  data bytea not null,
  primary key (import_id, seq)
);
alter table import_chunks alter column data set storage external;

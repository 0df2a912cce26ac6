-- Imports as people have their contacts (issue 48): the file's name and who sent it (recorded with
-- each imported contact's consent), the columns' mapping the person chose (column header to a
-- contact field, a property, or skip; null: recognised from the headers), and the lists the
-- imported contacts join.
alter table imports
  add column filename text,
  add column created_by text,
  add column mapping jsonb,
  add column list_ids uuid[] not null default '{}';

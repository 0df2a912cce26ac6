-- Contact search by the start of the address (GET /contacts?search=): the unique index becomes a
-- pattern index, which serves `email like 'prefix%'` in any database collation as well as the
-- equality lookups and upserts it served before. One index, so imports write no more than before.
create unique index contacts_project_email_pattern on contacts (project_id, email text_pattern_ops);
drop index contacts_project_email;
alter index contacts_project_email_pattern rename to contacts_project_email;

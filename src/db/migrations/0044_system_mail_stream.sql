-- The service's own mail (codes, notices) takes the path of every message (issue 46): a row of
-- `emails` in the stream `system`, delivered by the same scheduler, recorded in the same events.
-- It belongs to a project of its own, owned by an account nobody signs in to, which no API key,
-- member or listing reaches; the routes rules see it as transactional mail of no project.
alter table emails drop constraint emails_stream_check;
alter table emails add constraint emails_stream_check
  check (stream in ('transactional', 'marketing', 'automation', 'system'));

insert into accounts (id, email, name, email_confirmed_at, terms_accepted_at)
values ('00000000-0000-4000-8000-000000000001', 'system@posthorn.invalid', 'Posthorn', now(), now())
on conflict do nothing;
insert into workspaces (id, name, plan, owner_account_id)
values ('00000000-0000-4000-8000-000000000002', 'Posthorn system mail', 'unlimited',
        '00000000-0000-4000-8000-000000000001')
on conflict do nothing;
insert into projects (id, workspace_id, name)
values ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000002', 'System mail')
on conflict do nothing;

-- system_emails keeps what was sent before; what still waits there moves into `emails` when a
-- worker starts (domain/sending/system-mail.ts: adoptWaitingSystemMail), and its old jobs go.

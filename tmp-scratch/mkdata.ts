import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
await admin.query('drop database if exists audbench with (force)');
await admin.query('create database audbench');
await admin.end();
const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/audbench' });
await migrate(pool);
const t0 = Date.now();
const acc = await pool.query(`insert into accounts (email, name, terms_accepted_at) values ('b@example.com', 'B', now()) returning id`);
const ws = await pool.query(`insert into workspaces (name, owner_account_id, plan) values ('W', $1, 'unlimited') returning id`, [acc.rows[0].id]);
const pr = await pool.query(`insert into projects (workspace_id, name) values ($1, 'P') returning id`, [ws.rows[0].id]);
const pid = pr.rows[0].id;
console.log('project', pid);
await pool.query(`insert into contacts (project_id, email, first_name, properties)
  select $1, 'user' || i || '@example' || (i % 97) || '.com', 'F' || (i % 500),
         jsonb_build_object('plan', (array['free','pro','team','enterprise'])[1 + i % 4], 'city', (array['Paris','Berlin','Lisbon','Oslo','Rome','Leeds'])[1 + i % 6], 'seats', (i % 50)::text)
    from generate_series(0, 999999) i`, [pid]);
console.log('contacts', (Date.now() - t0) / 1000);
await pool.query('drop index events_project_name_time, events_contact_time, events_project_time, events_revenue');
await pool.query(`insert into events (project_id, contact_id, name, properties, value, currency, created_at)
     select $1, c.id, n.name,
            case when n.name = 'purchase' then jsonb_build_object('sku', 'SKU-' || (g % 20)) else '{}' end,
            case when n.name = 'purchase' then round((random() * 200)::numeric, 2) end,
            case when n.name = 'purchase' then 'EUR' end,
            now() - random() * interval '365 days'
       from contacts c cross join generate_series(1, 10) g
       cross join lateral (select (array['purchase', 'login', 'page_view', 'email_open', 'signup'])[1 + ((hashtext(c.id::text) + g) % 5 + 5) % 5] as name) n`, [pid]);
console.log('events', (Date.now() - t0) / 1000);
await pool.query('create index events_project_name_time on events (project_id, name, created_at) include (contact_id, value, currency)');
await pool.query('create index events_contact_time on events (contact_id, created_at desc)');
await pool.query('create index events_project_time on events (project_id, created_at desc, id desc)');
await pool.query('create index events_revenue on events (project_id, created_at) include (contact_id, value, currency, name) where value is not null');
await pool.query('vacuum analyze events'); await pool.query('vacuum analyze contacts');
console.log('indexed', (Date.now() - t0) / 1000);
await pool.end();

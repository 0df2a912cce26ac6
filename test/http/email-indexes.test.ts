import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Delivery updates each message twice (claim, outcome). Those updates are HOT, with no index work,
 * only while no index of `emails` names a column they change, in its columns, expressions or
 * predicate (migration 0026 removed one that named `status` in its predicate).
 */

/** The columns delivery (deliver.ts, delivery-outcomes.ts), cancellation and reports change. */
const UPDATED = [
  'status',
  'attempts',
  'updated_at',
  'last_response',
  'size_bytes',
  'sent_at',
  'next_attempt_at',
];

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

describe('emails indexes', () => {
  it('no index names a column that delivery updates', async () => {
    const { rows } = await sql<{ name: string; def: string }>`
      select c.relname as name, pg_get_indexdef(i.indexrelid) as def
        from pg_index i join pg_class c on c.oid = i.indexrelid
       where i.indrelid = 'emails'::regclass`.execute(server.runtime.ctx.db);
    expect(rows.length).toBeGreaterThan(3);
    for (const { name, def } of rows)
      for (const column of UPDATED)
        expect(def, `${name} names ${column}`).not.toMatch(new RegExp(`\\b${column}\\b`));
  });

  it("delivering messages updates their rows in place (HOT), as PostgreSQL's statistics count", async () => {
    const account = await server.signupConfirmed();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await server.call('POST', '/v1/emails', {
        key: account.project_key.key,
        body: { from: FROM, to: `hot-${i}@example.com`, subject: `HOT ${i}`, text: 'x' },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(res.body.id);
    }
    for (const id of ids) await waitForStatus(server, account.project_key.key, id, 'sent');
    // each backend reports its counts within about a second of going idle
    await eventually(
      async () => {
        const { rows } = await sql<{ upd: string; hot: string }>`
          select n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relid = 'emails'::regclass`.execute(
          server.runtime.ctx.db,
        );
        const upd = Number(rows[0].upd);
        const hot = Number(rows[0].hot);
        return upd >= 40 && hot >= upd * 0.9;
      },
      { timeoutMs: 15_000, intervalMs: 500, message: 'most updates of emails were not HOT' },
    );
  });
});

describe('the emails log over many messages', () => {
  it('finds one recipient among them, and estimates a status total over more than 100,000 (saying so)', async () => {
    const account = await server.signupConfirmed();
    const key = account.project_key.key;
    const n = 120_000;
    // every 40th bounced: 3,000; recipients user<i % 50,000>@scale.example
    await sql`
      insert into emails (id, project_id, stream, status, message_id, from_header, from_address, to_addresses,
                          recipients, subject, created_at)
      select gen_random_uuid(), ${account.project.id}, 'transactional',
             case when g % 40 = 0 then 'bounced' else 'delivered' end, '<' || g || '@scale.example>',
             'A <a@scale.example>', 'a@scale.example', array['U <User' || (g % 50000) || '@Scale.example>'],
             array['user' || (g % 50000) || '@scale.example'], 'S' || g, now() - g * interval '1 second'
        from generate_series(1, ${n}::int) g`.execute(server.runtime.ctx.db);
    await sql`analyze emails`.execute(server.runtime.ctx.db);

    const all = await server.call('GET', '/v1/emails?limit=5', { key });
    expect(all.body).toMatchObject({ total: n, total_estimated: false });
    const one = await server.call('GET', `/v1/emails?to=${encodeURIComponent('USER7@scale.example')}`, {
      key,
    });
    expect(one.body.total_estimated).toBe(false);
    expect(one.body.total).toBe(3); // g = 7, 50,007 and 100,007
    expect(one.body.data.map((e: { subject: string }) => e.subject)).toEqual(['S7', 'S50007', 'S100007']);

    const bounced = await server.call('GET', '/v1/emails?status=bounced&limit=10', { key });
    expect(bounced.status).toBe(200);
    expect(bounced.body.total_estimated).toBe(true);
    expect(bounced.body.total).toBeGreaterThan(3000 * 0.5);
    expect(bounced.body.total).toBeLessThan(3000 * 2);
    expect(bounced.body.data).toHaveLength(10);
    expect(bounced.body.data.every((e: { status: string }) => e.status === 'bounced')).toBe(true);
    // a narrower range is counted exactly
    const since = new Date(Date.now() - 40_000 * 1000).toISOString();
    const recent = await server.call('GET', `/v1/emails?status=bounced&created_after=${since}`, { key });
    expect(recent.body).toMatchObject({ total_estimated: false });
    expect(recent.body.total).toBeGreaterThanOrEqual(999);
    expect(recent.body.total).toBeLessThanOrEqual(1000);
  });
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Cursor pagination over items written in one batch (issue 47, item 6): they share a `created_at`
 * to the microsecond, which a JavaScript Date cannot hold, so a cursor compared through one skipped
 * the batch's other items going forward and returned the cursor itself going backward. Walking one
 * item at a time in either direction visits each item exactly once.
 */

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
}, 60_000);
afterAll(() => server?.close());

type Page = { has_more: boolean; data: { id: string }[] };

/** Walks a /resend list with limit=1 from the newest item `after` each one, then back `before` each one. */
async function walk(path: string, expected: number) {
  const get = async (query: string): Promise<Page> => {
    const res = await server.call('GET', `${path}?limit=1${query}`, { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const forward: string[] = [];
  let page = await get('');
  for (;;) {
    expect(page.data).toHaveLength(1);
    forward.push(page.data[0].id);
    if (!page.has_more || forward.length > expected) break;
    page = await get(`&after=${forward.at(-1)}`);
  }
  const backward: string[] = [forward.at(-1) as string];
  for (;;) {
    page = await get(`&before=${backward.at(-1)}`);
    if (page.data.length === 0) break;
    expect(page.data).toHaveLength(1);
    backward.push(page.data[0].id);
    if (backward.length > expected) break;
  }
  return { forward, backward };
}

describe('cursor pagination over one batch', () => {
  it('visits each of 13 emails of one batch exactly once, forward and backward, on /resend/emails', async () => {
    const batch = Array.from({ length: 13 }, (_, i) => ({
      from: 'Tests <onboarding@posthorn.localhost>',
      to: `reader${i}@recipient.example`,
      subject: `Batch ${i}`,
      text: 'x',
    }));
    const sent = await server.call('POST', '/resend/emails/batch', { key, body: batch });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const ids: string[] = sent.body.data.map((d: { id: string }) => d.id);
    const stamps = await sql<{ n: number }>`
      select count(distinct created_at)::int as n from emails where id = any(${ids}::uuid[])`.execute(
      server.runtime.ctx.db,
    );
    expect(stamps.rows[0].n).toBe(1);

    const { forward, backward } = await walk('/resend/emails', 13);
    expect(forward).toHaveLength(13);
    expect(new Set(forward)).toEqual(new Set(ids));
    expect(backward).toEqual([...forward].reverse());

    // /v1 pages its lists by offset (no cursor) in a stable order: each message once as well
    const v1: string[] = [];
    for (let offset = 0; offset < 14; offset++) {
      const res = await server.call('GET', `/v1/emails?limit=1&offset=${offset}`, { key });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      v1.push(...res.body.data.map((d: { id: string }) => d.id));
    }
    expect(v1).toHaveLength(13);
    expect(new Set(v1)).toEqual(new Set(ids));
  });

  it('visits each of 13 contacts written in one statement exactly once, forward and backward', async () => {
    const written = await sql<{ id: string }>`
      insert into contacts (project_id, email, properties)
      select ${account.project.id}, 'batch' || n || '@recipient.example', '{}'::jsonb
      from generate_series(1, 13) n returning id`.execute(server.runtime.ctx.db);
    const { forward, backward } = await walk('/resend/contacts', 13);
    expect(forward).toHaveLength(13);
    expect(new Set(forward)).toEqual(new Set(written.rows.map((r) => r.id)));
    expect(backward).toEqual([...forward].reverse());
  });
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CACHE_FROM_RECIPIENTS, FRESH_MS } from '../../src/domain/campaigns/stats-cache.ts';
import { insertReaders } from '../helpers/audience.ts';
import { eventually } from '../helpers/eventually.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A large sent campaign's page (issue 30, item 5) is counted at most every FRESH_MS: the first read
 * counts and keeps it, later reads get that count with when it was made, a stale one queues a new
 * count (the worker's campaign_stats_refresh) and is answered at once; a small or unfinished
 * campaign is counted on every read.
 */

let server: TestServer;
let key: string;
let projectId: string;
let listId: string;

beforeAll(async () => {
  server = await startTestServer();
  const account = await signupConfirmedInDatabase(server);
  key = account.project_key.key;
  projectId = account.project.id;
  listId = (await server.call('POST', '/v1/lists', { key, body: { name: 'Readers' } })).body.id;
  await insertReaders(server.runtime.ctx.db, { projectId, listId, count: 3, domain: 'readers.example' });
});
afterAll(async () => {
  await server?.close();
});

/** A campaign as its send leaves it: `status`, its snapshot's count, and the recipients it has so far. */
async function campaignAs(status: string, recipientCount: number, recipients: number) {
  const created = await server.call('POST', '/v1/campaigns', {
    key,
    body: {
      name: `Big ${status}`,
      from: 'onboarding@posthorn.localhost',
      subject: 'Hi',
      html: '<p>Hi</p>',
      list_ids: [listId],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id as string;
  await sql`update campaigns set status = ${status}, recipient_count = ${recipientCount} where id = ${id}`.execute(
    server.runtime.ctx.db,
  );
  await addRecipients(id, recipients);
  return id;
}

async function addRecipients(campaignId: string, n: number) {
  await sql`insert into campaign_recipients (campaign_id, contact_id, email, status)
    select ${campaignId}::uuid, c.id, c.email, 'queued' from contacts c
     where c.project_id = ${projectId}::uuid
       and not exists (select 1 from campaign_recipients r where r.campaign_id = ${campaignId}::uuid and r.contact_id = c.id)
     order by c.email limit ${n}`.execute(server.runtime.ctx.db);
}

const read = async (id: string) => {
  const [page, activity] = await Promise.all([
    server.call('GET', `/v1/campaigns/${id}`, { key }),
    server.call('GET', `/v1/campaigns/${id}/activity`, { key }),
  ]);
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  expect(activity.status, JSON.stringify(activity.body)).toBe(200);
  return { page: page.body, activity: activity.body };
};

describe("a large sent campaign's page", () => {
  it('is counted once, kept, and counted again after a stale read', async () => {
    const id = await campaignAs('sent', CACHE_FROM_RECIPIENTS, 1);
    const first = await read(id);
    expect(first.page.stats.recipients).toBe(1);
    expect(first.page.stats_as_of).not.toBeNull();
    expect(first.activity.as_of).not.toBeNull();

    // a change within FRESH_MS is not seen: the count is the kept one, with when it was made
    await addRecipients(id, 1);
    const second = await read(id);
    expect(second.page.stats.recipients).toBe(1);
    expect(second.page.stats_as_of).toBe(first.page.stats_as_of);

    // once the count is older than FRESH_MS, a read gets it at once and a new count follows
    await sql`update campaign_stats_cache set computed_at = now() - make_interval(secs => ${FRESH_MS / 1000 + 5})
               where campaign_id = ${id}`.execute(server.runtime.ctx.db);
    const stale = await read(id);
    expect(stale.page.stats.recipients).toBe(1);
    // the page and its activity name the same count; the two reads are two requests, and a count
    // that commits between them (a busy machine's refresh, or the next one a stale read queued) is
    // seen by one only, so a pair is read until both have it
    const fresh = await eventually(
      async () => {
        const now = await read(id);
        expect(now.page.stats.recipients).toBe(2);
        expect(now.activity.as_of).toBe(now.page.stats_as_of);
        return now;
      },
      { timeoutMs: 30_000 },
    );
    expect(Date.parse(fresh.page.stats_as_of)).toBeGreaterThan(Date.parse(first.page.stats_as_of));
  });

  it('is counted on every read while the campaign is small or still sending', async () => {
    for (const [status, count] of [
      ['sent', CACHE_FROM_RECIPIENTS - 1],
      ['sending', CACHE_FROM_RECIPIENTS],
    ] as const) {
      const id = await campaignAs(status, count, 1);
      const first = await read(id);
      expect(first.page.stats_as_of).toBeNull();
      expect(first.activity.as_of).toBeNull();
      await addRecipients(id, 1);
      expect((await read(id)).page.stats.recipients).toBe(2);
    }
    const kept = await server.runtime.ctx.db
      .selectFrom('campaign_stats_cache')
      .select('campaign_id')
      .execute();
    expect(kept).toHaveLength(1);
  });
});

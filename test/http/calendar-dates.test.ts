import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { FROM } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A day the month does not have (issue 47, item 7e): JavaScript rolls 2026-02-30 over into March
 * 2nd, so it was taken wherever a request carries a date (a `scheduled_at` in the past meant "send
 * now"; a warm-up's start_date was kept as it was written). Every one is a 400 naming the field,
 * and nothing is written.
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

const count = async (table: 'emails' | 'segments' | 'flows') =>
  Number(
    (
      await server.runtime.ctx.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('a date that is not on the calendar', () => {
  it('is a 400 as the scheduled_at of an email, at /v1 and /resend', async () => {
    const before = await count('emails');
    const email = { from: FROM, to: 'a@example.org', subject: 'S', text: 'x' };
    for (const scheduled_at of ['2026-02-30T09:00:00Z', '2026-04-31T09:00:00Z', '2026-02-29T09:00:00Z'])
      expectError(
        await server.call('POST', '/v1/emails', { key, body: { ...email, scheduled_at } }),
        400,
        /scheduled_at.*ISO 8601/,
      );
    const resend = await server.call('POST', '/resend/emails', {
      key,
      body: { ...email, scheduled_at: '2026-02-30T09:00:00Z' },
    });
    expect(resend.status, JSON.stringify(resend.body)).toBe(400);
    expect(resend.body.message).toMatch(/scheduled_at.*ISO 8601/);
    expect(await count('emails')).toBe(before);
  });

  it("is a 400 as a campaign's scheduled_at, read before anything else", async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    for (const scheduled_at of ['2027-02-30T09:00:00Z', '2027-02-29T09:00:00+01:00'])
      expectError(
        await server.call('POST', `/v1/campaigns/${id}/schedule`, { key, body: { scheduled_at } }),
        400,
        /scheduled_at.*ISO 8601/,
      );
  });

  it("is a 400 as a domain's warm-up start_date (it was kept as 2026-02-30, on day 281)", async () => {
    const domain = await server.call('POST', '/v1/domains', { key, body: { domain: 'dates.example' } });
    expect(domain.status, JSON.stringify(domain.body)).toBe(200);
    const res = await server.call('PATCH', `/v1/domains/${domain.body.id}`, {
      key,
      body: { warmup: { enabled: true, start_date: '2026-02-30' } },
    });
    expectError(res, 400, /warmup\.start_date/);
    expect((await server.call('GET', `/v1/domains/${domain.body.id}`, { key })).body.warmup).toBeNull();
  });

  it("is a 400 in a segment's condition and a flow's wait", async () => {
    const [segments, flows] = [await count('segments'), await count('flows')];
    expectError(
      await server.call('POST', '/v1/segments', {
        key,
        body: {
          name: 'Leap',
          definition: { all: [{ field: 'properties.signed_up', op: 'before', value: '2026-02-30' }] },
        },
      }),
      400,
      /ISO 8601 date/,
    );
    expectError(
      await server.call('POST', '/v1/flows', {
        key,
        body: {
          name: 'Leap',
          trigger: { type: 'manual' },
          steps: [{ type: 'wait', until: '2026-02-30T09:00:00Z' }],
        },
      }),
      400,
      /until.*ISO 8601/,
    );
    expect([await count('segments'), await count('flows')]).toEqual([segments, flows]);
  });

  it('is a 400 as a date filter of a list', async () => {
    for (const path of [
      '/v1/emails?created_after=2026-02-30',
      '/v1/contacts?created_before=2026-02-30',
      '/v1/events?created_after=2026-04-31T00:00:00Z',
    ])
      expectError(await server.call('GET', path, { key }), 400, /created_(after|before)/);
    const metrics = await server.call('GET', '/resend/emails/metrics?start_date=2026-11-31', { key });
    expect(metrics.status, JSON.stringify(metrics.body)).toBe(400);
    expect(metrics.body.message).toMatch(/start_date/);
  });
});

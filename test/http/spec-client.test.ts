import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { expectError } from '../helpers/assertions.ts';
import { addUsageToday, FROM } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Where a client written against the spec used to trip: deletes answer 204 with no body; a 429 says
 * which limit it is (`code`); a valid key on the wrong half of the API is 403 (401 is for a missing
 * or invalid key); `value` without `currency` is accepted; numbers too large for SQL in segment
 * conditions are a 400, never a 500.
 */

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
});
afterAll(() => server?.close());

const call = (method: string, path: string, body?: unknown, k = key) =>
  server.call(method, path, { key: k, body });

describe('deletes answer 204 with no body', () => {
  it('DELETE /v1/lists/{id}/contacts takes the contacts off the list', async () => {
    const list = await call('POST', '/v1/lists', { name: 'Readers' });
    expect(list.status).toBe(200);
    const emails = ['ann@readers.example', 'bob@readers.example'];
    expect((await call('POST', `/v1/lists/${list.body.id}/contacts`, { emails })).status).toBe(200);
    const removed = await call('DELETE', `/v1/lists/${list.body.id}/contacts`, { emails: [emails[0]] });
    expect(removed.status).toBe(204);
    expect(removed.body).toBeNull();
    expect((await call('GET', `/v1/lists/${list.body.id}`)).body.member_count).toBe(1);
    // an unknown list is still 404 {error}
    expectError(
      await call('DELETE', '/v1/lists/00000000-0000-4000-8000-000000000000/contacts', { emails }),
      404,
    );
  });

  it('DELETE /v1/flows/{id}/enrollments/{eid} cancels the enrollment', async () => {
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
    const footer = await call('PATCH', '/v1/me/footer', {
      address: 'Spec Ltd, 1 Test Street, Leeds LS1 1AA',
    });
    expect(footer.status).toBe(200);
    const flow = await call('POST', '/v1/flows', {
      name: 'Slow welcome',
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', duration_seconds: 3600 },
        { type: 'send', subject: 'An hour later', html: '<p>Hello</p>' },
      ],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(200);
    const activated = await call('POST', `/v1/flows/${flow.body.id}/activate`);
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    expect((await call('POST', '/v1/contacts', { email: 'cy@readers.example' })).status).toBe(200);
    const enrolled = await call('POST', `/v1/flows/${flow.body.id}/enrollments`, {
      email: 'cy@readers.example',
    });
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(200);
    const path = `/v1/flows/${flow.body.id}/enrollments/${enrolled.body.id}`;
    const cancelled = await call('DELETE', path);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(204);
    expect(cancelled.body).toBeNull();
    expect((await call('GET', path)).body.status).toBe('cancelled');
    expectError(await call('DELETE', path), 409, /cancelled/);
    await call('POST', `/v1/flows/${flow.body.id}/pause`);
  });

  it('the OpenAPI document says 204 for both', async () => {
    const doc = (await server.call('GET', '/v1/openapi.json')).body;
    for (const [path, method] of [
      ['/v1/lists/{id}/contacts', 'delete'],
      ['/v1/flows/{id}/enrollments/{enrollment_id}', 'delete'],
    ]) {
      const responses = Object.keys(doc.paths[path][method].responses);
      expect(responses, `${method} ${path}`).toContain('204');
      expect(responses, `${method} ${path}`).not.toContain('200');
    }
  });
});

describe('a 429 says which limit it is', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ POSTHORN_RATE_LIMIT: '2' });
  });
  afterAll(() => limited?.close());

  it('the request rate limit is `rate_limited`', async () => {
    const a = await limited.signup();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => limited.call('GET', '/v1/me', { key: a.project_key.key })),
    );
    const refused = answers.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.body).toEqual({ error: expect.stringMatching(/requests per second/), code: 'rate_limited' });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });

  it("the shared domain's daily cap is `daily_limit`", async () => {
    const other = await server.signupConfirmed();
    await setWorkspacePlan(server.runtime.ctx, other.workspace.id, 'starter');
    await addUsageToday(server, other.project.id, { sent: 500, shared_domain_sent: 500 });
    const daily = await call(
      'POST',
      '/v1/emails',
      { from: FROM, to: 'a@example.org', subject: 'S', text: 'x' },
      other.project_key.key,
    );
    expect(daily.status).toBe(429);
    expect(daily.body).toEqual({
      error: expect.stringMatching(/shared domain allows 500/),
      code: 'daily_limit',
    });
    expect(Number(daily.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('sign-in throttling is `rate_limited`', async () => {
    const email = 'nobody-here@example.org';
    let last = await server.call('POST', '/api/auth/login/password', {
      body: { email, password: 'wrong password' },
    });
    for (let i = 0; i < 6 && last.status !== 429; i++) {
      last = await server.call('POST', '/api/auth/login/password', {
        body: { email, password: 'wrong password' },
      });
    }
    expect(last.status).toBe(429);
    expect(last.body.code).toBe('rate_limited');
  });

  it('the OpenAPI document describes the code of a 429', async () => {
    const doc = (await server.call('GET', '/v1/openapi.json')).body;
    const schema = doc.components.schemas.RateLimitError;
    expect(schema.properties.code.enum).toEqual(['rate_limited', 'daily_limit']);
    expect(doc.paths['/v1/emails'].post.responses['429'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/RateLimitError',
    });
  });
});

describe('a valid key on the wrong half of the API is 403, saying what the key can do', () => {
  it('a project key on the account API', async () => {
    for (const [method, path] of [
      ['GET', '/v1/workspaces'],
      ['GET', '/v1/projects'],
      ['POST', `/v1/projects/${account.project.id}/api-keys`],
    ]) {
      const res = await call(method, path, method === 'POST' ? { name: 'x' } : undefined);
      expectError(res, 403, /project key: it acts only in its own project .*needs an all-access key/);
      expect(res.body.error).toContain(account.project.id);
    }
  });

  it('an API key on a dashboard-session endpoint', async () => {
    const path = `/api/teams/${account.project.id}/api-keys`;
    expectError(await call('POST', path, { name: 'x' }), 403, /dashboard session.*project key/);
    expectError(
      await call('POST', path, { name: 'x' }, account.account_key.key),
      403,
      /dashboard session.*all-access key/,
    );
  });

  it('a missing or invalid key is still 401', async () => {
    expectError(await server.call('GET', '/v1/workspaces'), 401);
    expectError(await call('GET', '/v1/workspaces', undefined, `${key.slice(0, -3)}abc`), 401);
    expectError(await server.call('POST', `/api/teams/${account.project.id}/api-keys`, { body: {} }), 401);
  });
});

describe('POST /v1/events: value and currency are each optional', () => {
  it('a value without a currency is revenue without one, reported apart from every currency', async () => {
    const fresh = await server.signup();
    const k = fresh.project_key.key;
    const tracked = await call(
      'POST',
      '/v1/events',
      { email: 'buyer@example.org', event: 'purchase', value: 12.5 },
      k,
    );
    expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    expect(tracked.body).toMatchObject({ object: 'event', contact_created: true });
    await call('POST', '/v1/events', { email: 'buyer@example.org', event: 'purchase', value: 7.5 }, k);
    await call(
      'POST',
      '/v1/events',
      { email: 'buyer@example.org', event: 'purchase', value: 4, currency: 'eur' },
      k,
    );
    await call('POST', '/v1/events', { email: 'buyer@example.org', event: 'signup', currency: 'USD' }, k);
    const events = await call('GET', '/v1/events?event=purchase', undefined, k);
    expect(
      events.body.data.map((e: { value: number; currency: string | null }) => [e.value, e.currency]),
    ).toEqual(
      expect.arrayContaining([
        [12.5, null],
        [7.5, null],
        [4, 'EUR'],
      ]),
    );
    const report = await call('GET', '/v1/reports/revenue?group_by=event', undefined, k);
    expect(report.status).toBe(200);
    expect(report.body.data).toEqual([
      { event: 'purchase', currency: 'EUR', revenue: 4, events: 1, quantity: 0 },
      { event: 'purchase', currency: null, revenue: 20, events: 2, quantity: 0 },
    ]);
    const eur = await call('GET', '/v1/reports/revenue?group_by=event&currency=EUR', undefined, k);
    expect(eur.body.data).toEqual([
      { event: 'purchase', currency: 'EUR', revenue: 4, events: 1, quantity: 0 },
    ]);
    // a revenue segment without a currency counts every value; with one, that currency only
    const any = await call(
      'POST',
      '/v1/segments/preview',
      { definition: { all: [{ revenue: { gte: 20 } }] } },
      k,
    );
    expect(any.body.count).toBe(1);
    const inEur = await call(
      'POST',
      '/v1/segments/preview',
      { definition: { all: [{ revenue: { gte: 20 }, currency: 'EUR' }] } },
      k,
    );
    expect(inEur.body.count).toBe(0);
  });

  it('a currency that is not ISO 4217 is still 400', async () => {
    expectError(
      await call('POST', '/v1/events', { email: 'x@example.org', event: 'x', value: 1, currency: 'EURO' }),
      400,
      /ISO 4217/,
    );
  });
});

describe('numbers too large for SQL in segment conditions are a 400', () => {
  const preview = (definition: unknown) => call('POST', '/v1/segments/preview', { definition });

  it.each([
    ['event count gte 1e20', { all: [{ event: 'purchase', count: { gte: 1e20 } }] }],
    ['event count lte 1e20', { all: [{ event: 'purchase', count: { lte: 1e20 } }] }],
    ['event count gte 2^63', { any: [{ event: 'purchase', count: { gte: 2 ** 63 } }] }],
    [
      'event count in a nested group',
      {
        all: [
          { field: 'subscribed', op: 'equals', value: true },
          { any: [{ event: 'x', count: { lte: 1e30 } }] },
        ],
      },
    ],
  ])('%s', async (_name, definition) => {
    expectError(await preview(definition), 400, /count: gte and lte must be whole numbers from 0 to/);
  });

  it('1e400 (Infinity once parsed) is refused, not compared as null', async () => {
    const body = '{"definition":{"all":[{"field":"properties.score","op":"equals","value":1e400}]}}';
    const res = await server.call('POST', '/v1/segments/preview', { key, body });
    expectError(res, 400, /finite number/);
  });

  it('a segment saved with such a number is refused the same way', async () => {
    expectError(
      await call('POST', '/v1/segments', {
        name: 'Whales',
        definition: { all: [{ event: 'purchase', count: { gte: 1e20 } }] },
      }),
      400,
      /count: gte and lte/,
    );
  });

  it('large numbers within range still work', async () => {
    for (const definition of [
      { all: [{ event: 'purchase', count: { gte: Number.MAX_SAFE_INTEGER } }] },
      { all: [{ revenue: { gte: 1e300 } }] },
      { all: [{ field: 'properties.score', op: 'gt', value: 1e300 }] },
      { all: [{ event: 'purchase', where: [{ property: 'total', op: 'in', value: [1e300, -1e300] }] }] },
    ]) {
      const res = await preview(definition);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.count).toBe(0);
    }
  });
});

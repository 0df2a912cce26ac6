import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { drainAudienceOutbox } from '../../src/domain/audience/triggers.ts';
import { expectError } from '../helpers/assertions.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  // no worker: the audience_event jobs stay queued, so the tests can see what was announced
  server = await startTestServer({}, ['api']);
  account = await server.signup();
  key = account.project_key.key;
});
afterAll(() => server?.close());

const post = (path: string, body: unknown, k = key) => server.call('POST', path, { key: k, body });

async function auditJobs(type: string) {
  // tracked events are announced through the outbox: move them into audience_event jobs first
  while ((await drainAudienceOutbox(server.runtime.ctx.db)) > 0) {
    // until it is empty
  }
  const { rows } = await server.runtime.ctx.pool.query(
    `select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      where t.identifier = 'audience_event' and j.payload->>'type' = $1`,
    [type],
  );
  return rows.map((r) => r.payload);
}

describe('contacts', () => {
  it('creates, reads by id and by email, updates with merged properties, and deletes', async () => {
    const created = await post('/v1/contacts', {
      email: '  Ada.Lovelace@Example.COM ',
      first_name: 'Ada',
      properties: { plan: 'pro', seats: 3, trial: false, signed_up: '2026-01-05' },
      consent: { status: 'granted', source: 'signup form', ip: '203.0.113.9', text: 'Send me news' },
    });
    expect(created.status).toBe(200);
    const contact = created.body;
    expect(contact).toMatchObject({
      object: 'contact',
      email: 'ada.lovelace@example.com',
      first_name: 'Ada',
      last_name: null,
      subscribed: true,
      lists: [],
      properties: { plan: 'pro', seats: 3, trial: false, signed_up: '2026-01-05' },
    });

    const byEmail = await server.call('GET', '/v1/contacts/ADA.LOVELACE@example.com', { key });
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.id).toBe(contact.id);
    expect(byEmail.body.consent_history).toEqual([
      expect.objectContaining({
        status: 'granted',
        source: 'signup form',
        ip: '203.0.113.9',
        text: 'Send me news',
      }),
    ]);

    const patched = await server.call('PATCH', `/v1/contacts/${contact.id}`, {
      key,
      body: {
        last_name: 'Lovelace',
        properties: { seats: 5, trial: null, city: 'London' },
        subscribed: false,
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.properties).toEqual({
      plan: 'pro',
      seats: 5,
      signed_up: '2026-01-05',
      city: 'London',
    });
    expect(patched.body.subscribed).toBe(false);
    // consent is history: the grant is still there, the withdrawal follows it
    expect(patched.body.consent_history.map((c: { status: string }) => c.status)).toEqual([
      'granted',
      'withdrawn',
    ]);

    expect((await auditJobs('contact.created')).some((p) => p.contact_ids.includes(contact.id))).toBe(true);
    expect(
      (await auditJobs('contact.subscription_changed')).some((p) => p.contact_ids.includes(contact.id)),
    ).toBe(true);

    const deleted = await server.call('DELETE', `/v1/contacts/${contact.id}`, { key });
    expect(deleted.status).toBe(204);
    expectError(await server.call('GET', `/v1/contacts/${contact.id}`, { key }), 404);
  });

  it('refuses a duplicate address (any case) with 409 and writes nothing', async () => {
    expect((await post('/v1/contacts', { email: 'dup@example.com' })).status).toBe(200);
    expectError(await post('/v1/contacts', { email: 'DUP@Example.com' }), 409, /already exists/);
    const list = await server.call('GET', '/v1/contacts?email=dup@example.com', { key });
    expect(list.body.total).toBe(1);
  });

  it('searches by the start of the address, in any case, with % and _ taken literally', async () => {
    for (const email of [
      'ann.lee@search.example',
      'anna@search.example',
      'bo_b@search.example',
      'bo.b@search.example',
    ]) {
      expect((await post('/v1/contacts', { email })).status).toBe(200);
    }
    const emailsFor = async (search: string) => {
      const res = await server.call('GET', `/v1/contacts?search=${encodeURIComponent(search)}`, { key });
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(res.body.data.length);
      return res.body.data.map((c: { email: string }) => c.email).sort();
    };
    expect(await emailsFor('ANN')).toEqual(['ann.lee@search.example', 'anna@search.example']);
    expect(await emailsFor('ann.')).toEqual(['ann.lee@search.example']);
    expect(await emailsFor('bo_')).toEqual(['bo_b@search.example']);
    expect(await emailsFor('%')).toEqual([]);
    expect(await emailsFor('  anna@search.example ')).toEqual(['anna@search.example']);
  });

  it('refuses bad input with 400 naming the problem', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /`email` is required/],
      [{ email: 'not-an-address' }, /valid email address/],
      [{ email: 'a@example.com', properties: [1, 2] }, /`properties` must be an object/],
      [{ email: 'a@example.com', properties: 'x' }, /`properties` must be an object/],
      [
        { email: 'a@example.com', properties: { nested: { a: 1 } } },
        /properties.nested` must be a string or a number or a boolean/,
      ],
      [{ email: 'a@example.com', properties: { 'bad key!': 1 } }, /not a valid name/],
      [{ email: 'a@example.com', subscribed: 'yes' }, /`subscribed` must be a boolean \(true or false\)/],
      [{ email: 'a@example.com', consent: { status: 'maybe' } }, /consent.status/],
      [{ email: 'a@example.com', first_name: 42 }, /`first_name` must be a string/],
    ];
    for (const [body, message] of cases) expectError(await post('/v1/contacts', body), 400, message);
    expect((await server.call('GET', '/v1/contacts?email=a@example.com', { key })).body.total).toBe(0);
  });

  it("another project's contact is 404, by id and by email", async () => {
    const mine = await post('/v1/contacts', { email: 'mine@example.com' });
    const other = await server.signup();
    expectError(
      await server.call('GET', `/v1/contacts/${mine.body.id}`, { key: other.project_key.key }),
      404,
    );
    expectError(
      await server.call('GET', '/v1/contacts/mine@example.com', { key: other.project_key.key }),
      404,
    );
    expectError(
      await server.call('PATCH', `/v1/contacts/${mine.body.id}`, {
        key: other.project_key.key,
        body: { first_name: 'x' },
      }),
      404,
    );
    expectError(
      await server.call('DELETE', `/v1/contacts/${mine.body.id}`, { key: other.project_key.key }),
      404,
    );
    expectError(await server.call('GET', '/v1/contacts/not-an-id', { key }), 404);
  });

  it('paginates with bounds and filters by subscription and creation date', async () => {
    const fresh = await server.signup();
    const k = fresh.project_key.key;
    for (let i = 0; i < 7; i++) {
      await post('/v1/contacts', { email: `p${i}@example.com`, subscribed: i % 2 === 0 }, k);
    }
    const first = await server.call('GET', '/v1/contacts?limit=3', { key: k });
    expect(first.body).toMatchObject({ total: 7, limit: 3, offset: 0 });
    expect(first.body.data.map((c: { email: string }) => c.email)).toEqual([
      'p6@example.com',
      'p5@example.com',
      'p4@example.com',
    ]);
    const last = await server.call('GET', '/v1/contacts?limit=3&offset=6', { key: k });
    expect(last.body.data).toHaveLength(1);
    expect((await server.call('GET', '/v1/contacts?subscribed=false', { key: k })).body.total).toBe(3);
    expect((await server.call('GET', '/v1/contacts?created_after=2000-01-01', { key: k })).body.total).toBe(
      7,
    );
    expect((await server.call('GET', '/v1/contacts?created_before=2000-01-01', { key: k })).body.total).toBe(
      0,
    );
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc', 'created_after=yesterday']) {
      expectError(await server.call('GET', `/v1/contacts?${q}`, { key: k }), 400);
    }
  });

  it('refuses contacts past the plan limit with 402, and GET /limits counts them', async () => {
    const small = await server.signup();
    const k = small.project_key.key;
    await server.runtime.ctx.pool.query(
      `insert into contacts (project_id, email) select $1, 'bulk' || g || '@example.com' from generate_series(1, 999) g`,
      [small.project.id],
    );
    expect((await post('/v1/contacts', { email: 'last@example.com' }, k)).status).toBe(200);
    const over = await post('/v1/contacts', { email: 'one-too-many@example.com' }, k);
    expect(over.status).toBe(402);
    expect(over.body).toMatchObject({
      code: 'plan_upgrade_required',
      feature: 'contacts',
      upgrade_to: 'starter',
    });
    const limits = await server.call('GET', '/v1/limits', { key: k });
    expect(limits.body.contacts).toEqual({ count: 1000, limit: 1000 });
    // an event for an unknown address would create a contact: refused the same way, nothing written
    const event = await post('/v1/events', { email: 'new-buyer@example.com', event: 'purchase' }, k);
    expect(event.status).toBe(402);
    expect(event.body).toMatchObject({ code: 'plan_upgrade_required', feature: 'contacts' });
    const batch = await post(
      '/v1/events',
      [
        { email: 'last@example.com', event: 'login' },
        { email: 'new-buyer@example.com', event: 'purchase' },
      ],
      k,
    );
    expect(batch.status).toBe(402);
    const none = await server.call('GET', '/v1/events', { key: k });
    expect(none.body.total).toBe(0);
    // an event for a known contact is still tracked
    expect((await post('/v1/events', { email: 'last@example.com', event: 'login' }, k)).status).toBe(200);
    expect((await server.call('GET', '/v1/limits', { key: k })).body.contacts.count).toBe(1000);
    // over the limit (as after a downgrade): known contacts' events still pass, new ones do not
    await server.runtime.ctx.pool.query(
      `insert into contacts (project_id, email) values ($1, 'over@example.com')`,
      [small.project.id],
    );
    expect((await post('/v1/events', { email: 'over@example.com', event: 'login' }, k)).status).toBe(200);
    expect((await post('/v1/events', { email: 'newer@example.com', event: 'login' }, k)).status).toBe(402);
    await setWorkspacePlan(server.runtime.ctx, small.workspace.id, 'unlimited');
    expect((await post('/v1/contacts', { email: 'one-too-many@example.com' }, k)).status).toBe(200);
  });
});

describe('lists', () => {
  it('creates lists, adds and removes members in bulk, and counts them', async () => {
    const news = await post('/v1/lists', { name: 'Newsletter', description: 'Weekly' });
    expect(news.status).toBe(200);
    expect(news.body).toMatchObject({ object: 'list', name: 'Newsletter', member_count: 0 });
    expectError(await post('/v1/lists', { name: 'Newsletter' }), 409);
    expectError(await post('/v1/lists', {}), 400, /`name` is required/);

    const known = await post('/v1/contacts', { email: 'known@example.com' });
    const added = await post(`/v1/lists/${news.body.id}/contacts`, {
      emails: ['known@example.com', 'new.member@example.com', 'NEW.member@example.com'],
    });
    expect(added.body).toMatchObject({ added: 2, already_members: 0, contacts_created: 1 });
    const again = await post(`/v1/lists/${news.body.id}/contacts`, { ids: [known.body.id] });
    expect(again.body).toMatchObject({ added: 0, already_members: 1 });

    const lists = await server.call('GET', '/v1/lists', { key });
    expect(lists.body.data.find((l: { id: string }) => l.id === news.body.id).member_count).toBe(2);
    const members = await server.call('GET', `/v1/contacts?list=${news.body.id}`, { key });
    expect(members.body.total).toBe(2);
    const contact = await server.call('GET', '/v1/contacts/known@example.com', { key });
    expect(contact.body.lists).toEqual([news.body.id]);
    expect((await auditJobs('list.joined')).some((p) => p.list_id === news.body.id)).toBe(true);

    const removed = await server.call('DELETE', `/v1/lists/${news.body.id}/contacts`, {
      key,
      body: { emails: ['new.member@example.com'] },
    });
    expect(removed.status).toBe(204);
    expect((await server.call('GET', `/v1/lists/${news.body.id}`, { key })).body.member_count).toBe(1);

    expectError(await post(`/v1/lists/${news.body.id}/contacts`, { emails: ['bad'] }), 400, /emails\[0\]/);
    expectError(await post(`/v1/lists/${news.body.id}/contacts`, {}), 400, /either `emails`/);
    expectError(
      await post(`/v1/lists/${news.body.id}/contacts`, { ids: ['00000000-0000-4000-8000-000000000000'] }),
      400,
      /No contact with id/,
    );
  });

  it('unsubscribing from one list keeps the others; unsubscribing from all marketing is the contact flag', async () => {
    const a = await post('/v1/lists', { name: 'Product updates' });
    const b = await post('/v1/lists', { name: 'Events' });
    await post(`/v1/lists/${a.body.id}/contacts`, { emails: ['reader@example.com'] });
    await post(`/v1/lists/${b.body.id}/contacts`, { emails: ['reader@example.com'] });
    const left = await post(`/v1/lists/${a.body.id}/unsubscribe`, { emails: ['reader@example.com'] });
    expect(left.body.unsubscribed).toBe(1);
    const reader = await server.call('GET', '/v1/contacts/reader@example.com', { key });
    expect(reader.body.lists).toEqual([b.body.id]);
    expect(reader.body.subscribed).toBe(true);
    const listA = await server.call('GET', `/v1/lists/${a.body.id}`, { key });
    expect(listA.body).toMatchObject({ member_count: 0, unsubscribed_count: 1 });

    await server.call('PATCH', '/v1/contacts/reader@example.com', { key, body: { subscribed: false } });
    expect((await server.call('GET', '/v1/contacts/reader@example.com', { key })).body.subscribed).toBe(
      false,
    );
  });

  it("another project's list is 404", async () => {
    const list = await post('/v1/lists', { name: 'Private' });
    const other = await server.signup();
    expectError(await server.call('GET', `/v1/lists/${list.body.id}`, { key: other.project_key.key }), 404);
    expectError(
      await post(`/v1/lists/${list.body.id}/contacts`, { emails: ['x@example.com'] }, other.project_key.key),
      404,
    );
    expect((await server.call('DELETE', `/v1/lists/${list.body.id}`, { key })).status).toBe(204);
  });
});

describe('events', () => {
  it('tracks an event, creating the contact when unknown, and lists it', async () => {
    const res = await post('/v1/events', {
      email: 'Buyer@Example.com',
      event: 'purchase',
      properties: { sku: 'A-1' },
      value: 49.9,
      currency: 'eur',
      quantity: 2,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'event', contact_created: true });
    const contact = await server.call('GET', '/v1/contacts/buyer@example.com', { key });
    expect(contact.body.id).toBe(res.body.contact_id);

    const second = await post('/v1/events', { email: 'buyer@example.com', event: 'page_view' });
    expect(second.body).toMatchObject({ contact_created: false, contact_id: res.body.contact_id });

    const list = await server.call('GET', '/v1/events?event=purchase', { key });
    expect(list.body.total).toBe(1);
    expect(list.body.data[0]).toMatchObject({
      id: res.body.id,
      event: 'purchase',
      email: 'buyer@example.com',
      value: 49.9,
      currency: 'EUR',
      quantity: 2,
      properties: { sku: 'A-1' },
    });
    const mine = await server.call('GET', '/v1/contacts/buyer@example.com/events', { key });
    expect(mine.body.total).toBe(2);
    const byEmail = await server.call('GET', '/v1/events?email=Buyer@Example.com', { key });
    expect(byEmail.body.total).toBe(2);
    expect(byEmail.body.data.map((e: { event: string }) => e.event).sort()).toEqual([
      'page_view',
      'purchase',
    ]);
    const nobody = await server.call('GET', '/v1/events?email=nobody@example.com', { key });
    expect(nobody.body).toMatchObject({ data: [], total: 0 });
    expect((await auditJobs('event.tracked')).some((p) => p.event_ids.includes(res.body.id))).toBe(true);
  });

  it('concurrent events for one new address create one contact and keep every event', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        post('/v1/events', { email: 'rush@example.com', event: 'click', properties: { n: i } }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.contact_id)).size).toBe(1);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(30);
    expect(results.filter((r) => r.body.contact_created)).toHaveLength(1);
    const listed = await server.call('GET', '/v1/contacts/rush@example.com/events?limit=100', { key });
    expect(listed.body.total).toBe(30);
  });

  it('accepts an array of events and refuses it whole when one is bad', async () => {
    const ok = await post('/v1/events', [
      { email: 'batch1@example.com', event: 'signup' },
      { email: 'batch2@example.com', event: 'signup' },
    ]);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toHaveLength(2);
    const before = (await server.call('GET', '/v1/events?event=refused', { key })).body.total;
    expectError(
      await post('/v1/events', [
        { email: 'batch3@example.com', event: 'refused' },
        { email: 'batch4@example.com' },
      ]),
      400,
      /\[1\]\.event/,
    );
    expect((await server.call('GET', '/v1/events?event=refused', { key })).body.total).toBe(before);
  });

  it('refuses bad events with 400', async () => {
    const cases: [unknown, RegExp][] = [
      [{ event: 'x' }, /`email` is required/],
      [{ email: 'x@example.com' }, /`event` is required/],
      [{ email: 'x@example.com', event: 'x', value: 10, currency: 'EURO' }, /ISO 4217/],
      [{ email: 'x@example.com', event: 'x', value: '10', currency: 'EUR' }, /`value` must be a number/],
      [{ email: 'x@example.com', event: 'x', properties: [] }, /`properties` must be an object/],
      [JSON.stringify('just a string'), /request body must be a JSON object/],
      [[], /1 to 100 events/],
    ];
    for (const [body, message] of cases) expectError(await post('/v1/events', body), 400, message);
  });

  it('reports revenue per currency by day and by event', async () => {
    const fresh = await server.signup();
    const k = fresh.project_key.key;
    await post(
      '/v1/events',
      { email: 'r1@example.com', event: 'purchase', value: 10, currency: 'EUR', quantity: 1 },
      k,
    );
    await post(
      '/v1/events',
      { email: 'r2@example.com', event: 'purchase', value: 15.5, currency: 'EUR', quantity: 2 },
      k,
    );
    await post('/v1/events', { email: 'r2@example.com', event: 'renewal', value: 7, currency: 'USD' }, k);
    await post('/v1/events', { email: 'r2@example.com', event: 'login' }, k);
    const byEvent = await server.call('GET', '/v1/reports/revenue?group_by=event', { key: k });
    expect(byEvent.body.data).toEqual([
      { event: 'purchase', currency: 'EUR', revenue: 25.5, events: 2, quantity: 3 },
      { event: 'renewal', currency: 'USD', revenue: 7, events: 1, quantity: 0 },
    ]);
    const byDay = await server.call('GET', '/v1/reports/revenue', { key: k });
    const today = new Date().toISOString().slice(0, 10);
    expect(byDay.body.data).toEqual([
      { day: today, currency: 'EUR', revenue: 25.5, events: 2, quantity: 3 },
      { day: today, currency: 'USD', revenue: 7, events: 1, quantity: 0 },
    ]);
    expectError(await server.call('GET', '/v1/reports/revenue?group_by=week', { key: k }), 400);
  });
});

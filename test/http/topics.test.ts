import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Topics (issue 50, build item 1): per project, each with a default for contacts who never chose;
 * a contact's choices through GET/PATCH /v1/contacts/{id}/topics and `topics` on create and
 * update, each change in the consent history with its source and announced to webhooks.
 */

let server: TestServer;
let account: SignupResult;
let key: string;
let receiver: ReturnType<typeof createServer>;
const hooks: { type: string; data: any }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      hooks.push(JSON.parse(raw));
      res.writeHead(200);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' }, ['api', 'worker']);
  account = await server.signupConfirmed();
  key = account.project_key.key;
  const hook = await server.call('POST', '/v1/webhooks', {
    key,
    body: {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['contact.topic_subscribed', 'contact.topic_unsubscribed'],
    },
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
});
afterAll(async () => {
  await server?.close();
  receiver?.close();
});

const topic = async (body: object) => {
  const made = await server.call('POST', '/v1/topics', { key, body });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body;
};

describe('topics', () => {
  it('are made, listed with their subscribers, renamed, and keep their default', async () => {
    const news = await topic({
      name: 'Newsletter',
      description: 'Once a month',
      default_subscription: 'opt_in',
    });
    expect(news).toMatchObject({ object: 'topic', name: 'Newsletter', visibility: 'public', subscribers: 0 });
    await server.call('POST', '/v1/contacts', { key, body: { email: 'one@example.org' } });
    await server.call('POST', '/v1/contacts', { key, body: { email: 'two@example.org', subscribed: false } });
    // opt_in: every contact subscribed to marketing who never chose
    expect((await server.call('GET', `/v1/topics/${news.id}`, { key })).body.subscribers).toBe(1);
    const renamed = await server.call('PATCH', `/v1/topics/${news.id}`, {
      key,
      body: { name: 'Monthly letter', visibility: 'private' },
    });
    expect(renamed.body).toMatchObject({ name: 'Monthly letter', visibility: 'private' });
    expectError(
      await server.call('PATCH', `/v1/topics/${news.id}`, { key, body: { default_subscription: 'opt_out' } }),
      400,
      /cannot change/,
    );
    expectError(
      await server.call('POST', '/v1/topics', {
        key,
        body: { name: 'Monthly letter', default_subscription: 'opt_in' },
      }),
      409,
    );
    expectError(await server.call('POST', '/v1/topics', { key, body: { name: 'No default' } }), 400);
    const listed = await server.call('GET', '/v1/topics', { key });
    expect(listed.body.data.map((t: { name: string }) => t.name)).toContain('Monthly letter');
    // another project's topic is 404
    const other = await server.signupConfirmed();
    expectError(await server.call('GET', `/v1/topics/${news.id}`, { key: other.project_key.key }), 404);
  });

  it("are a contact's choice, recorded with its source and announced, each topic apart", async () => {
    const updates = await topic({ name: 'Product updates', default_subscription: 'opt_in' });
    const events = await topic({ name: 'Events', default_subscription: 'opt_out' });
    const made = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'reader@example.org', topics: [{ id: events.id, subscription: 'opt_in' }] },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const mine = async () =>
      Object.fromEntries(
        (await server.call('GET', `/v1/contacts/${made.body.id}/topics`, { key })).body.data.map(
          (t: { id: string; subscription: string; chosen: boolean }) => [t.id, [t.subscription, t.chosen]],
        ),
      );
    expect(await mine()).toMatchObject({ [updates.id]: ['opt_in', false], [events.id]: ['opt_in', true] });

    const patched = await server.call('PATCH', '/v1/contacts/reader@example.org/topics', {
      key,
      body: { topics: [{ id: updates.id, subscription: 'opt_out' }] },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(await mine()).toMatchObject({ [updates.id]: ['opt_out', true], [events.id]: ['opt_in', true] });
    // the same choice again changes nothing and records nothing
    await server.call('PATCH', `/v1/contacts/${made.body.id}`, {
      key,
      body: { topics: [{ id: updates.id, subscription: 'opt_out' }] },
    });
    const history = (await server.call('GET', `/v1/contacts/${made.body.id}`, { key })).body.consent_history;
    expect(history.filter((h: { topic_id: string | null }) => h.topic_id)).toEqual([
      expect.objectContaining({ status: 'granted', source: 'api', topic_id: events.id }),
      expect.objectContaining({ status: 'withdrawn', source: 'api', topic_id: updates.id }),
    ]);
    // still subscribed to marketing as a whole
    expect((await server.call('GET', `/v1/contacts/${made.body.id}`, { key })).body.subscribed).toBe(true);
    await eventually(() => {
      const mineHooks = hooks.filter((h) => h.data?.email === 'reader@example.org');
      expect(mineHooks.map((h) => [h.type, h.data.topic.id]).sort()).toEqual(
        [
          ['contact.topic_subscribed', events.id],
          ['contact.topic_unsubscribed', updates.id],
        ].sort(),
      );
    });
  });

  it('refuse bad choices whole, naming what is wrong, and write nothing', async () => {
    const t = await topic({ name: 'Tips', default_subscription: 'opt_in' });
    const c = (await server.call('POST', '/v1/contacts', { key, body: { email: 'careful@example.org' } }))
      .body;
    const bad = [
      { topics: [] },
      { topics: [{ id: t.id, subscription: 'maybe' }] },
      { topics: [{ id: 'nope', subscription: 'opt_in' }] },
      { topics: [{ id: '00000000-0000-4000-8000-000000000000', subscription: 'opt_in' }] },
      {
        topics: [
          { id: t.id, subscription: 'opt_in' },
          { id: t.id, subscription: 'opt_out' },
        ],
      },
    ];
    for (const body of bad)
      expectError(await server.call('PATCH', `/v1/contacts/${c.id}/topics`, { key, body }), 400);
    expectError(
      await server.call('POST', '/v1/contacts', {
        key,
        body: {
          email: 'never@example.org',
          topics: [{ id: '00000000-0000-4000-8000-000000000000', subscription: 'opt_in' }],
        },
      }),
      400,
      /not a topic of this project/,
    );
    expectError(await server.call('GET', '/v1/contacts/never@example.org', { key }), 404);
    expectError(await server.call('GET', '/v1/contacts/nobody@example.org/topics', { key }), 404);
    expect((await server.call('GET', `/v1/contacts/${c.id}`, { key })).body.consent_history).toEqual([]);
  });

  it('are conditions of segments: who gets a topic now, by choice or by default', async () => {
    const owner = await server.signupConfirmed();
    const k = owner.project_key.key;
    const made = async (body: object) => (await server.call('POST', '/v1/topics', { key: k, body })).body;
    const weekly = await made({ name: 'Weekly', default_subscription: 'opt_in' });
    const offers = await made({ name: 'Offers', default_subscription: 'opt_out' });
    const contact = async (email: string, body: object = {}) =>
      (await server.call('POST', '/v1/contacts', { key: k, body: { email, ...body } })).body;
    await contact('never-chose@example.org');
    await contact('left-weekly@example.org', { topics: [{ id: weekly.id, subscription: 'opt_out' }] });
    await contact('joined-offers@example.org', { topics: [{ id: offers.id, subscription: 'opt_in' }] });
    await contact('unsubscribed@example.org', {
      subscribed: false,
      topics: [{ id: offers.id, subscription: 'opt_in' }],
    });
    const count = async (definition: object) => {
      const res = await server.call('POST', '/v1/segments/preview', { key: k, body: { definition } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.count;
    };
    expect(await count({ all: [{ topic: weekly.id, op: 'subscribed' }] })).toBe(2);
    expect(await count({ all: [{ topic: offers.id, op: 'subscribed' }] })).toBe(1);
    expect(await count({ all: [{ topic: offers.id, op: 'not_subscribed' }] })).toBe(3);
    expect(
      await count({
        any: [
          { topic: weekly.id, op: 'not_subscribed' },
          { topic: offers.id, op: 'subscribed' },
        ],
      }),
    ).toBe(3);
    // another project's topic, or a bad operator, is a 400 naming it
    expectError(
      await server.call('POST', '/v1/segments', {
        key: k,
        body: {
          name: 'Theirs',
          definition: {
            all: [
              { topic: (await topic({ name: 'Mine', default_subscription: 'opt_in' })).id, op: 'subscribed' },
            ],
          },
        },
      }),
      400,
      /does not exist in this project/,
    );
    expectError(
      await server.call('POST', '/v1/segments/preview', {
        key: k,
        body: { definition: { all: [{ topic: weekly.id, op: 'member' }] } },
      }),
      400,
      /subscribed or not_subscribed/,
    );
  });

  it("are chosen for every contact an import creates or updates, recorded as the import's consent", async () => {
    const owner = await server.signupConfirmed();
    const k = owner.project_key.key;
    const made = async (body: object) => (await server.call('POST', '/v1/topics', { key: k, body })).body;
    const digest = await made({ name: 'Digest', default_subscription: 'opt_out' });
    const promos = await made({ name: 'Promotions', default_subscription: 'opt_in' });
    // one contact exists and already joined the digest: no change there, nothing recorded
    await server.call('POST', '/v1/contacts', {
      key: k,
      body: { email: 'known@example.org', topics: [{ id: digest.id, subscription: 'opt_in' }] },
    });
    const topics = JSON.stringify([
      { id: digest.id, subscription: 'opt_in' },
      { id: promos.id, subscription: 'opt_out' },
    ]);
    const res = await server.call(
      'POST',
      `/v1/contacts/import?topics=${encodeURIComponent(topics)}&filename=club.csv`,
      {
        key: k,
        body: 'Email\nknown@example.org\nnew@example.org\n',
        headers: { 'content-type': 'text/csv' },
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.topics).toEqual(JSON.parse(topics));
    await eventually(async () =>
      expect((await server.call('GET', `/v1/imports/${res.body.id}`, { key: k })).body.status).toBe(
        'completed',
      ),
    );
    for (const email of ['known@example.org', 'new@example.org']) {
      const mine = (await server.call('GET', `/v1/contacts/${email}/topics`, { key: k })).body.data;
      expect(
        Object.fromEntries(mine.map((t: { name: string; subscription: string }) => [t.name, t.subscription])),
      ).toEqual({
        Digest: 'opt_in',
        Promotions: 'opt_out',
      });
    }
    const history = async (email: string) =>
      (await server.call('GET', `/v1/contacts/${email}`, { key: k })).body.consent_history.filter(
        (h: { topic_id: string | null }) => h.topic_id,
      );
    // the known contact: only the promotions changed (the digest was chosen already, by the API)
    expect(await history('known@example.org')).toEqual([
      expect.objectContaining({ source: 'api', topic_id: digest.id, status: 'granted' }),
      expect.objectContaining({
        source: 'import',
        topic_id: promos.id,
        status: 'withdrawn',
        text: expect.stringContaining('"club.csv"'),
      }),
    ]);
    expect(
      (await history('new@example.org'))
        .map((h: { source: string; topic_id: string }) => [h.source, h.topic_id])
        .sort(),
    ).toEqual(
      [
        ['import', digest.id],
        ['import', promos.id],
      ].sort(),
    );
    // a topic that is not the project's, or not JSON, refuses the upload whole
    for (const bad of [
      JSON.stringify([{ id: '00000000-0000-4000-8000-000000000000', subscription: 'opt_in' }]),
      '{oops',
    ])
      expectError(
        await server.call('POST', `/v1/contacts/import?topics=${encodeURIComponent(bad)}`, {
          key: k,
          body: 'Email\nnever@example.org\n',
          headers: { 'content-type': 'text/csv' },
        }),
        400,
      );
    expectError(await server.call('GET', '/v1/contacts/never@example.org', { key: k }), 404);
  });
});

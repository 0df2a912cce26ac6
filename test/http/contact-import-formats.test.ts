import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Issue 48, build item 1: the exports of Mailchimp, Brevo, listmonk, Resend and Substack
// (test/fixtures/imports/README.md) import through POST /v1/contacts/import without an edit.

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  key = (await server.signup()).project_key.key;
});
afterAll(() => server?.close());

async function importFixture(name: string) {
  const file = readFileSync(new URL(`../fixtures/imports/${name}`, import.meta.url));
  const res = await fetch(`${server.url}/v1/contacts/import?filename=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
    body: file,
  });
  const started = (await res.json()) as any;
  expect(res.status, JSON.stringify(started)).toBe(200);
  return eventually(
    async () => {
      const done = await server.call('GET', `/v1/imports/${started.id}`, { key });
      if (done.body.status !== 'completed' && done.body.status !== 'failed')
        throw new Error(`last: ${JSON.stringify(done.body)}`);
      return done.body;
    },
    { timeoutMs: 20_000, intervalMs: 100, message: `the import of ${name} did not finish` },
  );
}

const contact = async (email: string) => (await server.call('GET', `/v1/contacts/${email}`, { key })).body;

describe('exports of other tools import without an edit', () => {
  it('Mailchimp (a byte-order mark, quoted headers, its own columns as properties)', async () => {
    const done = await importFixture('mailchimp-subscribed.csv');
    expect(done).toMatchObject({ status: 'completed', created: 3, error_count: 0, errors: [] });
    const ada = await contact('ada@example.com');
    expect(ada).toMatchObject({
      first_name: 'Ada',
      last_name: 'Lovelace',
      subscribed: true,
      properties: {
        phone_number: '+44 20 7946 0018',
        MEMBER_RATING: '4',
        OPTIN_TIME: '2024-03-01 09:12:44',
        TAGS: '"Customer","VIP"',
      },
    });
    expect(ada.consent_history).toEqual([
      expect.objectContaining({
        status: 'granted',
        source: 'import',
        text: expect.stringContaining('"mailchimp-subscribed.csv"'),
      }),
    ]);
    expect((await contact('linus@example.com')).last_name).toBeNull();
  });

  it('Mailchimp saved with semicolons', async () => {
    const done = await importFixture('mailchimp-semicolon.csv');
    expect(done).toMatchObject({ status: 'completed', created: 2, error_count: 0 });
    expect(await contact('berlin@example.com')).toMatchObject({
      first_name: 'Bea',
      last_name: 'Berg',
      properties: { phone_number: '+49 30 1234567', TAGS: 'Newsletter' },
    });
  });

  it('Brevo (semicolons, upper-case attributes)', async () => {
    const done = await importFixture('brevo-contacts.csv');
    expect(done).toMatchObject({ status: 'completed', created: 2, error_count: 0 });
    expect(await contact('ines@example.com')).toMatchObject({
      first_name: 'Inès',
      last_name: 'Dubois',
      properties: { contact_id: '1', SMS: '33612345678', ADDED_TIME: '2024-01-15 10:22:31' },
    });
  });

  it('listmonk (a full name, JSON attributes, a blocklisted subscriber)', async () => {
    const done = await importFixture('listmonk-subscribers.csv');
    expect(done).toMatchObject({ status: 'completed', created: 2, error_count: 0 });
    expect(await contact('priya@example.com')).toMatchObject({
      first_name: 'Priya',
      last_name: 'Raman',
      subscribed: true,
      properties: {
        city: 'Bengaluru',
        projects: 3,
        beta: true,
        uuid: '5e2d3c4b-1a2b-4c3d-8e9f-0a1b2c3d4e5f',
      },
    });
    const blocked = await contact('blocked@example.com');
    expect(blocked).toMatchObject({ first_name: 'Kai', last_name: null, subscribed: false });
    expect(blocked.consent_history).toEqual([
      expect.objectContaining({ status: 'withdrawn', source: 'import' }),
    ]);
  });

  it('Resend (unsubscribed true is no subscription)', async () => {
    const done = await importFixture('resend-contacts.csv');
    expect(done).toMatchObject({ status: 'completed', created: 2, error_count: 0 });
    expect(await contact('steve@example.com')).toMatchObject({ first_name: 'Steve', subscribed: true });
    expect(await contact('left@example.com')).toMatchObject({ first_name: 'Lee', subscribed: false });
  });

  it('Substack (email_disabled true is no subscription; the plan kept)', async () => {
    const done = await importFixture('substack-subscribers.csv');
    expect(done).toMatchObject({ status: 'completed', created: 3, error_count: 0 });
    expect(await contact('patron@example.com')).toMatchObject({
      subscribed: true,
      properties: { plan: 'yearly', active_subscription: 'true', expiry: '2025-01-10T15:20:00.000Z' },
    });
    expect((await contact('gone@example.com')).subscribed).toBe(false);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/assertions.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { flowWorkSettled } from '../helpers/flows.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import type { SinkMessage } from '../helpers/smtp-sink.ts';

/**
 * Campaigns and flow send steps for a topic (issue 50, build item 2): only the topic's subscribers
 * get them (their choice, else the topic's default), the audience count says so, one-click
 * unsubscribe from such a message leaves that topic only, and a flow step for a topic passes the
 * others by without the message, counting them.
 */

let server: TestServer;
let account: SignupResult;
let key: string;
let listId: string;
/** A: opt_out (only those who joined); B: opt_in (everyone who did not leave). */
const topics = { a: '', b: '' };
const ids = new Map<string, string>();

const JOINED_A = 'joined-a@topics.example';
const NEVER_CHOSE = 'never-chose@topics.example';
const LEFT_B = 'left-b@topics.example';
const UNSUBSCRIBED = 'unsubscribed@topics.example';

async function contact(email: string, body: Record<string, unknown> = {}) {
  const made = await server.call('POST', '/v1/contacts', { key, body: { email, ...body } });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  ids.set(email, made.body.id);
}

async function createCampaign(name: string, extra: Record<string, unknown>) {
  const created = await server.call('POST', '/v1/campaigns', {
    key,
    body: { name, from: FROM, subject: name, html: `<p>${name}</p>`, list_ids: [listId], ...extra },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body;
}

/** Sends a campaign to the list and returns its messages by recipient once it is sent. */
async function runCampaign(name: string, extra: Record<string, unknown> = {}) {
  const campaign = await createCampaign(name, extra);
  const started = await server.call('POST', `/v1/campaigns/${campaign.id}/send`, { key });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await waitForCampaignStatus(server, key, campaign.id, 'sent', 30_000);
  const mine = server.sink.messages.filter((m) =>
    String(m.parsed.headers.get('feedback-id') ?? '').includes(campaign.id),
  );
  return new Map(mine.map((m) => [m.to[0], m]));
}

const recipients = (messages: Map<string, SinkMessage>) => [...messages.keys()].sort();

/** The https/http URI of a message's List-Unsubscribe header. */
function oneClickUrl(message: SinkMessage): string {
  const header = message.parsed.headerLines.find((h) => h.key === 'list-unsubscribe')?.line ?? '';
  const url = /<(https?:\/\/[^>]+)>/.exec(header)?.[1];
  if (!url) throw new Error(`no http URI in List-Unsubscribe: ${header}`);
  return `${server.url}${new URL(url).pathname}`;
}

async function subscriptions(email: string) {
  const res = await server.call('GET', `/v1/contacts/${ids.get(email)}/topics`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Object.fromEntries(
    res.body.data.map((t: { id: string; subscription: string }) => [t.id, t.subscription]),
  );
}

beforeAll(async () => {
  server = await startTestServer();
  account = await marketingAccount(server, 'Topic Tests Ltd, 3 Mill Lane, Leeds LS1 4AB');
  key = account.project_key.key;
  for (const [k, name, def] of [
    ['a', 'Product updates', 'opt_out'],
    ['b', 'Newsletter', 'opt_in'],
  ] as const) {
    const made = await server.call('POST', '/v1/topics', { key, body: { name, default_subscription: def } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    topics[k] = made.body.id;
  }
  await contact(JOINED_A, { topics: [{ id: topics.a, subscription: 'opt_in' }] });
  await contact(NEVER_CHOSE);
  await contact(LEFT_B, { topics: [{ id: topics.b, subscription: 'opt_out' }] });
  await contact(UNSUBSCRIBED, { subscribed: false, topics: [{ id: topics.a, subscription: 'opt_in' }] });
  listId = (await server.call('POST', '/v1/lists', { key, body: { name: 'Everyone' } })).body.id;
  const added = await server.call('POST', `/v1/lists/${listId}/contacts`, {
    key,
    body: { emails: [JOINED_A, NEVER_CHOSE, LEFT_B, UNSUBSCRIBED] },
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
}, 60_000);
afterAll(async () => {
  await server?.close();
});

describe('campaigns for a topic', () => {
  it('refuse a topic that is not the project’s, naming the field', async () => {
    const other = await server.signupConfirmed();
    const theirs = await server.call('POST', '/v1/topics', {
      key: other.project_key.key,
      body: { name: 'Theirs', default_subscription: 'opt_in' },
    });
    expect(theirs.status).toBe(200);
    const res = await server.call('POST', '/v1/campaigns', {
      key,
      body: { name: 'x', from: FROM, subject: 'x', html: '<p>x</p>', topic_id: theirs.body.id },
    });
    expectError(res, 400, /topic_id/);
    expectError(
      await server.call('POST', '/v1/campaigns', {
        key,
        body: { name: 'x', from: FROM, subject: 'x', html: '<p>x</p>', topic_id: 'not-a-topic' },
      }),
      400,
      /topic_id/,
    );
  });

  it('reach only the topic’s subscribers: opt_out only those who joined, opt_in all who did not leave; the preview counts them', async () => {
    const draft = await createCampaign('Preview A', { topic_id: topics.a });
    expect(draft.topic_id).toBe(topics.a);
    expect((await server.call('GET', `/v1/campaigns/${draft.id}/audience`, { key })).body.recipients).toBe(1);
    const cleared = await server.call('PATCH', `/v1/campaigns/${draft.id}`, {
      key,
      body: { topic_id: null },
    });
    expect(cleared.body.topic_id).toBeNull();
    expect((await server.call('GET', `/v1/campaigns/${draft.id}/audience`, { key })).body.recipients).toBe(3);

    expect(recipients(await runCampaign('For A', { topic_id: topics.a }))).toEqual([JOINED_A]);
    expect(recipients(await runCampaign('For B', { topic_id: topics.b }))).toEqual(
      [JOINED_A, NEVER_CHOSE].sort(),
    );
  });

  it('one-click from a topic-A message leaves A only: B and mail without a topic still arrive', async () => {
    const a = await runCampaign('A again', {
      topic_id: topics.a,
      html: '<p>A again</p><p><a href="{{ preferences_url }}">Choose what you get</a></p>',
    });
    const message = a.get(JOINED_A) as SinkMessage;
    // {{ preferences_url }} became the reader's preference page, untracked
    const link = /href="([^"]+)">Choose what you get/.exec(String(message.parsed.html))?.[1] ?? '';
    expect(link).toMatch(/^https?:\/\/[^/]+\/u\/[\w-]+$/);
    expect(new URL(link).pathname).toBe(new URL(oneClickUrl(message)).pathname);

    const res = await fetch(oneClickUrl(message), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(res.status).toBe(200);
    expect(await subscriptions(JOINED_A)).toMatchObject({ [topics.a]: 'opt_out', [topics.b]: 'opt_in' });
    const got = (await server.call('GET', `/v1/contacts/${ids.get(JOINED_A)}`, { key })).body;
    expect(got.subscribed).toBe(true);
    expect(got.consent_history).toContainEqual(
      expect.objectContaining({ status: 'withdrawn', source: 'one_click', topic_id: topics.a }),
    );

    const third = await createCampaign('A third', { topic_id: topics.a });
    expectError(await server.call('POST', `/v1/campaigns/${third.id}/send`, { key }), 400, /its topic/);
    expect(recipients(await runCampaign('B again', { topic_id: topics.b }))).toContain(JOINED_A);
    expect(recipients(await runCampaign('No topic'))).toContain(JOINED_A);
  });

  it('one-click from a message without a topic still leaves all marketing', async () => {
    const plain = await runCampaign('Plain');
    const res = await fetch(oneClickUrl(plain.get(LEFT_B) as SinkMessage), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(res.status).toBe(200);
    expect((await server.call('GET', `/v1/contacts/${ids.get(LEFT_B)}`, { key })).body.subscribed).toBe(
      false,
    );
  });
});

describe('a flow send step for a topic', () => {
  it('passes enrollments not subscribed to the topic without the message, and counts them', async () => {
    const created = await server.call('POST', '/v1/flows', {
      key,
      body: {
        name: 'Onboarding',
        trigger: { type: 'manual' },
        steps: [
          { id: 'tips', type: 'send', subject: 'Tips for A', html: '<p>Tips</p>', topic_id: topics.a },
          { id: 'welcome', type: 'send', subject: 'Welcome', html: '<p>Welcome</p>' },
        ],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const flowId = created.body.id;
    expect((await server.call('POST', `/v1/flows/${flowId}/activate`, { key })).status).toBe(200);
    const inA = 'flow-in@topics.example';
    const outA = 'flow-out@topics.example';
    await contact(inA, { topics: [{ id: topics.a, subscription: 'opt_in' }] });
    await contact(outA);
    for (const email of [inA, outA]) {
      const res = await server.call('POST', `/v1/flows/${flowId}/enrollments`, { key, body: { email } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    await flowWorkSettled(server);
    const subjects = (to: string) =>
      eventually(
        () => {
          const got = server.sink.messages.filter((m) => m.to.includes(to)).map((m) => m.parsed.subject);
          if (!got.includes('Welcome')) throw new Error(`${to}: ${got}`);
          return got.sort();
        },
        { timeoutMs: 20_000 },
      );
    expect(await subjects(inA)).toEqual(['Tips for A', 'Welcome']);
    expect(await subjects(outA)).toEqual(['Welcome']);
    const stats = (await server.call('GET', `/v1/flows/${flowId}`, { key })).body.stats;
    expect(stats.steps.find((s: { id: string }) => s.id === 'tips')).toMatchObject({
      entered: 2,
      skipped: 1,
    });
    expect(stats.steps.find((s: { id: string }) => s.id === 'welcome')).toMatchObject({ skipped: 0 });
    expectError(
      await server.call('PATCH', `/v1/flows/${flowId}`, {
        key,
        body: {
          steps: [
            {
              type: 'send',
              subject: 'x',
              html: '<p>x</p>',
              topic_id: '00000000-0000-4000-8000-000000000000',
            },
          ],
        },
      }),
      400,
      /steps\[0\]\.topic_id/,
    );
  });
});

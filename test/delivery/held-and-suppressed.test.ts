import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';
import { SIM_NETWORKS, type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * What a person reading an email sees of the back-off (issue 46), through the API: a message held
 * because its site asked to slow down is `queued` with a `held` event naming the site's answer and
 * `held_until` (its `next_attempt_at`); a suppressed recipient is recorded once, not again on each
 * retry of the message's other recipients.
 */

const FROM = 'Held Test <onboarding@posthorn.localhost>';
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-held-'));
let net: SimInternet;
let rated: SimServer;
let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  net = await startSimInternet();
  rated = await net.server('mx.rated.test', '127.0.0.91', { perMinute: 1 });
  net.mx('rated.test', [[10, 'mx.rated.test']]);
  const routes = path.join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      routes: { direct: { type: 'direct', port: net.port, allow_networks: SIM_NETWORKS } },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  server = await startTestServer({
    POSTHORN_ROUTES: routes,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_DNS_SERVERS: net.dns.address,
    POSTHORN_RETRY_SCHEDULE: '1',
  });
  account = await unlimitedSender(server);
  key = account.project_key.key;
}, 60_000);

afterAll(async () => {
  await server?.close();
  await net?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface EmailView {
  status: string;
  next_attempt_at: string | null;
  events: { type: string; recipient: string | null; detail: Record<string, unknown> }[];
}

async function email(id: string): Promise<EmailView> {
  const res = await server.call('GET', `/v1/emails/${id}`, { key });
  expect(res.status).toBe(200);
  return res.body as EmailView;
}

async function send(to: string | string[]): Promise<string> {
  const res = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to, subject: 'Hi', text: 'x' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

describe('a message held by its site', () => {
  it('is queued with a held event: the site answer and held_until, which is also its next attempt', async () => {
    const first = await send('one@rated.test');
    await eventually(async () => expect((await email(first)).status).toBe('delivered'), {
      timeoutMs: 20_000,
    });
    // the site takes one a minute: the second is refused (4.7.28) and the site held
    const second = await send('two@rated.test');
    await eventually(async () => expect((await email(second)).status).toBe('deferred'), {
      timeoutMs: 20_000,
    });
    const third = await send('three@rated.test');
    const held = await eventually(
      async () => {
        const view = await email(third);
        const event = view.events.find((e) => e.type === 'held');
        if (!event) throw new Error(`no held event yet: ${JSON.stringify(view.events)}`);
        return { view, event };
      },
      { timeoutMs: 20_000 },
    );
    expect(held.view.status).toBe('queued');
    expect(held.event.detail.response).toMatch(/4\.7\.28/);
    expect(held.event.detail.response).toMatch(/mx\.rated\.test/);
    const until = Date.parse(held.event.detail.held_until as string);
    expect(until).toBeGreaterThan(Date.now() + 30_000);
    expect(Date.parse(held.view.next_attempt_at as string)).toBe(until);
    // never tried: the site saw one refusal, for the second message
    expect(rated.rateDeferrals).toBe(1);
    expect(rated.messages.map((m) => m.to)).toEqual([['one@rated.test']]);
  });
});

describe('a suppressed recipient beside one that is deferred', () => {
  it('is recorded suppressed once, however often the message is tried again', async () => {
    const added = await server.call('POST', '/v1/suppressions', { key, body: { email: 'gone@example.org' } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const id = await send(['gone@example.org', 'deferred@simulator.posthorn.test']);
    const view = await eventually(
      async () => {
        const v = await email(id);
        expect(v.status).toBe('delivered');
        return v;
      },
      { timeoutMs: 30_000 },
    );
    expect(view.events.filter((e) => e.type === 'deferred').length).toBeGreaterThanOrEqual(1);
    expect(
      view.events.filter((e) => e.type === 'suppressed'),
      JSON.stringify(view.events),
    ).toHaveLength(1);
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

/**
 * A relay route that takes the data and never answers (issue 46): project A's mail to it fills
 * every connection of the route and waits behind them, and all the while project B's
 * transactional mail and a sign-in code leave by the other route. A job slot never waits on a
 * relay: the scheduler holds the sessions.
 */

const FROM = 'Slow Relay Test <onboarding@posthorn.localhost>';
const SLOW_MESSAGES = 30;
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-slow-relay-'));
let fast: SmtpSink;
let slow: SmtpSink;
let server: TestServer;
let a: SignupResult;
let b: SignupResult;
let release = () => {};
const held = new Set<string>();

beforeAll(async () => {
  fast = await startSmtpSink();
  slow = await startSmtpSink();
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  slow.hold = (to) => {
    for (const t of to) held.add(t);
    return released;
  };
  const routes = path.join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      routes: {
        default: { type: 'smtp', url: fast.url },
        slow: { type: 'smtp', url: slow.url, pool_size: 10 },
      },
      rules: [
        { match: { recipient_domain: 'slow.test' }, routes: ['slow'] },
        { match: {}, routes: ['default'] },
      ],
    }),
  );
  server = await startTestServer({ POSTHORN_ROUTES: routes, POSTHORN_SMTP_RELAY: '' });
  a = await unlimitedSender(server);
  b = await unlimitedSender(server, { email: 'person@fast.test' });
}, 60_000);

afterAll(async () => {
  release();
  await server?.close();
  await fast?.close();
  await slow?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function send(key: string, to: string, subject: string): Promise<string> {
  const res = await server.call('POST', '/v1/emails', { key, body: { from: FROM, to, subject, text: 'x' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

describe('a relay route that never answers the data', () => {
  it("holds only its own connections: another project's mail and a sign-in code leave by the other route", async () => {
    for (let i = 0; i < SLOW_MESSAGES; i++)
      await send(a.project_key.key, `reader${i}@slow.test`, `slow ${i}`);
    // the slow route's ten connections each hold a message; the other twenty wait for one
    await eventually(() => expect(held.size).toBe(10), {
      timeoutMs: 30_000,
      message: "the slow route's connections were not all taken",
    });

    const sent = [];
    for (let i = 0; i < 5; i++)
      sent.push(await send(b.project_key.key, `reader${i}@fast.test`, `for B ${i}`));
    const login = await server.call('POST', '/api/auth/login', { body: { email: 'person@fast.test' } });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    await eventually(
      () => {
        const to = fast.messages.flatMap((m) => m.to);
        for (let i = 0; i < 5; i++) expect(to).toContain(`reader${i}@fast.test`);
        // the sign-up code, then the sign-in code
        expect(to.filter((t) => t === 'person@fast.test').length).toBe(2);
      },
      { timeoutMs: 60_000, message: "B's mail or the sign-in code did not leave beside the slow relay" },
    );
    for (const id of sent) {
      const res = await server.call('GET', `/v1/emails/${id}`, { key: b.project_key.key });
      expect(res.body.status).toBe('sent');
    }
    // A's messages are all still in flight: ten at the relay, the rest waiting for a connection
    expect(held.size).toBe(10);
    expect(slow.messages).toHaveLength(0);
    const { rows } = await server.runtime.ctx.pool.query<{ n: number }>(
      `select count(*)::int as n from emails where project_id = $1 and status = 'sending'`,
      [a.project.id],
    );
    expect(rows[0].n).toBe(SLOW_MESSAGES);

    // once the relay answers, A's mail leaves too
    release();
    await eventually(() => expect(slow.messages).toHaveLength(SLOW_MESSAGES), {
      timeoutMs: 60_000,
      message: "A's mail never left once the relay answered",
    });
  }, 180_000);
});

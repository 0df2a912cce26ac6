import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';
import { SIM_NETWORKS, type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * A tarpit on the simulated internet (issue 46): project A mails 50 domains whose MX takes the data
 * and never answers the final dot, and 10 domains whose MTA-STS policy host sends one byte every
 * 2 s. While every one of A's sessions is held open, project B's transactional mail through the
 * same direct route and a dashboard sign-in code are delivered: a slow site costs its own
 * connections, never a worker. The MTA-STS fetches end at their deadline (one per domain) and
 * those domains' mail is then delivered as to a domain with no policy.
 */

const TARPITS = 50;
const DRIPS = 10;
const FROM = 'Tarpit Test <onboarding@posthorn.localhost>';
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-tarpit-'));
let net: SimInternet;
let tarpit: SimServer;
let fine: SimServer;
const drips: { requests: number }[] = [];
let server: TestServer;
let a: SignupResult;
let b: SignupResult;

beforeAll(async () => {
  net = await startSimInternet();
  // one tarpit machine behind 50 MX names: 50 sites, one connection each
  tarpit = await net.server('mx.tarpit-0.test', '127.0.0.51', { tarpit: true });
  for (let i = 0; i < TARPITS; i++) {
    if (i > 0) net.address(`mx.tarpit-${i}.test`, '127.0.0.51');
    net.mx(`tarpit-${i}.test`, [[10, `mx.tarpit-${i}.test`]]);
  }
  fine = await net.server('mx.ok.test', '127.0.0.52');
  net.mx('ok.test', [[10, 'mx.ok.test']]);
  for (let i = 0; i < DRIPS; i++) {
    net.mx(`drip-${i}.test`, [[10, 'mx.ok.test']]);
    drips.push(await net.mtaStsDrip(`drip-${i}.test`, `127.0.0.${60 + i}`));
  }
  const routes = path.join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      routes: { direct: { type: 'direct', port: net.port, allow_networks: SIM_NETWORKS } },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  const ca = path.join(dir, 'ca.pem');
  writeFileSync(ca, net.ca);
  server = await startTestServer({
    POSTHORN_ROUTES: routes,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_DNS_SERVERS: net.dns.address,
    POSTHORN_MTA_STS_PORT: String(net.httpsPort),
    POSTHORN_MTA_STS_TEST_CA: ca,
  });
  // B's person signs in by emailed code: their address is at the fine domain
  a = await unlimitedSender(server);
  b = await unlimitedSender(server, { email: 'person@ok.test' });
}, 120_000);

afterAll(async () => {
  // the tarpit answers its held messages (421) as it closes, so the sessions end before the server
  await net?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function send(key: string, to: string, subject: string): Promise<string> {
  const res = await server.call('POST', '/v1/emails', { key, body: { from: FROM, to, subject, text: 'x' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

describe('a direct route with tarpits and a dripping MTA-STS host', () => {
  it("delivers another project's transactional mail and a sign-in code while every tarpit session is held", async () => {
    const keyA = a.project_key.key;
    for (let i = 0; i < TARPITS; i++) await send(keyA, `someone@tarpit-${i}.test`, `tarpit ${i}`);
    // two messages to the first dripping domain: one policy fetch serves both
    for (let i = 0; i < DRIPS; i++) await send(keyA, `someone@drip-${i}.test`, `drip ${i}`);
    await send(keyA, 'another@drip-0.test', 'drip 0 again');
    await eventually(() => expect(tarpit.held).toBe(TARPITS), {
      timeoutMs: 60_000,
      message: 'not every tarpit session reached the final dot',
    });

    // every one of A's tarpit sessions is held open: B's mail and a sign-in code go all the same
    const keyB = b.project_key.key;
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await send(keyB, `reader${i}@ok.test`, `for B ${i}`));
    const login = await server.call('POST', '/api/auth/login', { body: { email: 'person@ok.test' } });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    await eventually(
      () => {
        const to = fine.messages.flatMap((m) => m.to);
        for (let i = 0; i < 5; i++) expect(to).toContain(`reader${i}@ok.test`);
        // the sign-up code, then the sign-in code
        expect(to.filter((t) => t === 'person@ok.test').length).toBe(2);
      },
      { timeoutMs: 60_000, message: "B's mail or the sign-in code was not delivered beside the tarpits" },
    );
    expect(tarpit.held).toBe(TARPITS);
    for (const id of sent) {
      const res = await server.call('GET', `/v1/emails/${id}`, { key: keyB });
      expect(res.body.status).toBe('delivered');
    }

    // the policy hosts are cut off at the fetch's deadline, once per domain, and their mail then
    // goes as to a domain without a policy
    await eventually(
      () => {
        const to = fine.messages.flatMap((m) => m.to);
        for (let i = 0; i < DRIPS; i++) expect(to).toContain(`someone@drip-${i}.test`);
        expect(to).toContain('another@drip-0.test');
      },
      { timeoutMs: 60_000, message: 'the domains with a dripping policy host were not delivered to' },
    );
    expect(drips.map((d) => d.requests)).toEqual(drips.map(() => 1));
    expect(tarpit.held).toBe(TARPITS);
  }, 180_000);
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';
import { SIM_NETWORKS, type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * A silent site's queue is its own (issue 46): messages waiting for a tarpit's connections wait in
 * that site's lane, bounded there, not in the process's room (POSTHORN_DELIVERY_QUEUE, here 10).
 * Project A's 30 messages queue behind the one connection a tarpit takes and never answers; project
 * B's transactional mail to another site is delivered all the same. (When waiting in a lane counted
 * in the room, the tarpit's queue filled it and every other message waited for the tarpit's deadline:
 * bench:direct with 5 % of its domains tarpitted stalled for five minutes.)
 */

const FROM = 'Queue Test <onboarding@posthorn.localhost>';
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-tarpit-queue-'));
let net: SimInternet;
let tarpit: SimServer;
let fine: SimServer;
let server: TestServer;
let a: SignupResult;
let b: SignupResult;
/** When the tarpit took the first message and stopped answering. */
let stalledSince = 0;

beforeAll(async () => {
  net = await startSimInternet();
  tarpit = await net.server('mx.pit.test', '127.0.0.71', { tarpit: true });
  net.mx('pit.test', [[10, 'mx.pit.test']]);
  fine = await net.server('mx.fine.test', '127.0.0.72');
  net.mx('fine.test', [[10, 'mx.fine.test']]);
  const routes = path.join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      routes: {
        direct: {
          type: 'direct',
          port: net.port,
          allow_networks: SIM_NETWORKS,
          sites: { 'mx.pit.test': { max_connections: 1 } },
        },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  server = await startTestServer({
    POSTHORN_ROUTES: routes,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_DNS_SERVERS: net.dns.address,
    POSTHORN_DELIVERY_QUEUE: '10',
  });
  a = await unlimitedSender(server);
  b = await unlimitedSender(server);
}, 120_000);

afterAll(async () => {
  await net?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function send(key: string, to: string): Promise<string> {
  const res = await server.call('POST', '/v1/emails', {
    key,
    body: { from: FROM, to, subject: 'x', text: 'x' },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

describe("a tarpit's queue", () => {
  it("holds its own messages, not the process's room: another project's mail to another site is delivered", async () => {
    const keyA = a.project_key.key;
    await send(keyA, 'first@pit.test');
    await eventually(() => expect(tarpit.held).toBe(1), { timeoutMs: 30_000 });
    stalledSince = Date.now();
    // thirty more to the same site: its one connection is held, so they wait in its lane
    for (let i = 0; i < 30; i++) await send(keyA, `queued${i}@pit.test`);
    const keyB = b.project_key.key;
    for (let i = 0; i < 3; i++) await send(keyB, `reader${i}@fine.test`);
    await eventually(
      () => {
        const to = fine.messages.flatMap((m) => m.to);
        for (let i = 0; i < 3; i++) expect(to).toContain(`reader${i}@fine.test`);
      },
      { timeoutMs: 60_000, message: "B's mail waited behind the tarpit's queue" },
    );
    // the tarpit still holds its one session: nothing of A's was delivered or sent again
    expect(tarpit.held).toBe(1);
  }, 120_000);

  it('sends a message that finds the stalled queue full back for as long as the site has sat on its connection', async () => {
    // the site has held its one connection without a word for 12 s (the state this is about)
    await eventually(() => expect(Date.now() - stalledSince).toBeGreaterThan(12_000), { timeoutMs: 60_000 });
    // its lane keeps at most 30 waiting (10 a connection and 20 more): forty more fill it, and
    // those that find it full go back to the queue, their attempt not counted, until next_attempt_at
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(await send(a.project_key.key, `too-many${i}@pit.test`));
    const back = await eventually(
      async () => {
        const views = await Promise.all(
          ids.map(
            async (id) => (await server.call('GET', `/v1/emails/${id}`, { key: a.project_key.key })).body,
          ),
        );
        const sentBack = views.filter((v) => v.next_attempt_at !== null);
        expect(sentBack.length).toBeGreaterThan(0);
        // not the 5 s a busy but answering site's mail waits: about as long as the site has stalled
        const at = Date.now();
        for (const v of sentBack) expect(Date.parse(v.next_attempt_at) - at).toBeGreaterThan(10_000);
        return sentBack;
      },
      { timeoutMs: 30_000, message: 'sent back for no longer than a busy site that answers' },
    );
    for (const v of back) {
      expect(v.status).toBe('queued');
      expect(v.attempts).toBe(0);
    }
  }, 120_000);
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { eventually } from '../helpers/eventually.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * A direct route through the worker (issue 32): messages accepted by the API go to each
 * recipient's MX on a simulated internet. A greylisted recipient is delivered on the message's
 * first retry, and that retry goes to it alone: the recipient another domain took on the first
 * attempt gets no second copy. Each attempt's MX host, address and TLS are on the timeline. An
 * MX on an address outside the route's allow_networks is bounced without a connection (issue 47).
 */

const FROM = 'Direct Test <onboarding@posthorn.localhost>';
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-direct-'));
let net: SimInternet;
let grey: SimServer;
let open: SimServer;
let paced: SimServer;
let loopback: SimServer;
let server: TestServer;
let key: string;

beforeAll(async () => {
  net = await startSimInternet();
  grey = await net.server('mx.grey.test', '127.0.0.41', { greylist: true });
  open = await net.server('mx.open.test', '127.0.0.42');
  net.mx('grey.test', [[10, 'mx.grey.test']]);
  net.mx('open.test', [[10, 'mx.open.test']]);
  net.mx('nomail.test', []);
  paced = await net.server('mx.paced.test', '127.0.0.43');
  net.mx('paced.test', [[10, 'mx.paced.test']]);
  // outside the route's allow_networks: a loopback address it must not reach
  loopback = await net.server('mx.loop.test', '127.0.0.1');
  net.mx('loop.test', [[10, 'mx.loop.test']]);
  const file = path.join(dir, 'routes.json');
  writeFileSync(
    file,
    JSON.stringify({
      routes: {
        direct: {
          type: 'direct',
          port: net.port,
          // the servers and the source address (127.0.0.40-47), not 127.0.0.1
          allow_networks: ['127.0.0.40/29'],
          source_addresses: [{ address: '127.0.0.40', ehlo: 'mta1.posthorn.test' }],
          sites: { 'mx.paced.test': { messages_per_hour: 1 } },
        },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  server = await startTestServer({
    POSTHORN_ROUTES: file,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_DNS_SERVERS: net.dns.address,
    POSTHORN_RETRY_SCHEDULE: '1,1,2,2,3',
  });
  const account = await signupConfirmedInDatabase(server);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  key = account.project_key.key;
}, 60_000);

afterAll(async () => {
  await server?.close();
  await net?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function email(id: string) {
  const res = await server.call('GET', `/v1/emails/${id}`, { key });
  expect(res.status).toBe(200);
  return res.body as {
    status: string;
    message_id: string;
    events: { type: string; recipient: string | null; detail: Record<string, any> }[];
  };
}

describe('a direct route', () => {
  it('delivers a greylisted recipient on the first retry, and only to it', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: ['ann@open.test', 'bob@grey.test'], subject: 'Straight to you', text: 'Hello' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.id as string;
    const done = await eventually(
      async () => {
        const e = await email(id);
        expect(e.status).toBe('delivered');
        return e;
      },
      { timeoutMs: 30_000 },
    );
    expect(grey.greylisted).toBe(1);
    const types = done.events.map((e) => `${e.type} ${e.recipient ?? ''}`.trim());
    expect(types).toEqual(
      expect.arrayContaining([
        'delivered ann@open.test',
        'deferred bob@grey.test',
        'delivered bob@grey.test',
      ]),
    );
    // one copy each, from the configured address and name, with the same Message-ID
    const byMessageId = (s: SimServer) =>
      s.messages.filter((m) => m.raw.toString().includes(done.message_id));
    expect(byMessageId(open).map((m) => m.to)).toEqual([['ann@open.test']]);
    expect(byMessageId(grey).map((m) => m.to)).toEqual([['bob@grey.test']]);
    for (const m of [...byMessageId(open), ...byMessageId(grey)]) {
      expect(m.peer).toBe('127.0.0.40');
      expect(m.ehlo).toBe('mta1.posthorn.test');
      expect(m.tls).toBe(true);
    }
    const delivered = done.events.find((e) => e.type === 'delivered' && e.recipient === 'bob@grey.test');
    expect(delivered?.detail.via).toMatchObject({
      mx: 'mx.grey.test',
      address: '127.0.0.41',
      source: '127.0.0.40',
      tls: expect.stringMatching(/^TLSv1\.[23] unverified$/),
    });
  });

  it('bounces a null MX recipient at once, without suppressing another domain', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: ['carl@nomail.test'], subject: 'Nowhere', text: 'Hello' },
    });
    expect(res.status).toBe(200);
    const done = await eventually(
      async () => {
        const e = await email(res.body.id);
        expect(e.status).toBe('bounced');
        return e;
      },
      { timeoutMs: 30_000 },
    );
    expect(done.events.find((e) => e.type === 'bounced')?.detail.response).toMatch(/^556 5\.1\.10 .*null MX/);
  });

  it('bounces a recipient whose MX is on 127.0.0.1 with no connection made, and does not suppress it', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: ['dora@loop.test'], subject: 'Inside', text: 'Hello' },
    });
    expect(res.status).toBe(200);
    const done = await eventually(
      async () => {
        const e = await email(res.body.id);
        expect(e.status).toBe('bounced');
        return e;
      },
      { timeoutMs: 30_000 },
    );
    expect(done.events.find((e) => e.type === 'bounced')?.detail).toMatchObject({
      response: expect.stringMatching(
        /^550 5\.4\.4 mail for loop\.test is not delivered to internal addresses: mx\.loop\.test \(127\.0\.0\.1\) is a loopback address/,
      ),
      bounce_type: 'block',
    });
    expect(loopback.accepted + loopback.refusedConnections).toBe(0);
    expect(loopback.messages).toEqual([]);
    const suppressed = await server.runtime.ctx.db
      .selectFrom('suppressions')
      .select('email')
      .where('email', '=', 'dora@loop.test')
      .execute();
    expect(suppressed).toEqual([]);
  });

  it('holds a message its site has no room for back in the queue, without spending an attempt', async () => {
    const send = async (n: number) => {
      const res = await server.call('POST', '/v1/emails', {
        key,
        body: { from: FROM, to: [`reader${n}@paced.test`], subject: `Paced ${n}`, text: 'Hello' },
      });
      expect(res.status).toBe(200);
      return res.body.id as string;
    };
    const first = await send(1);
    await eventually(async () => expect((await email(first)).status).toBe('delivered'), {
      timeoutMs: 30_000,
    });
    const second = await send(2);
    // tried once, held for the next hour's slot: queued again, its attempt given back, nothing sent
    await eventually(
      async () => {
        const row = await server.runtime.ctx.db
          .selectFrom('emails')
          .select(['status', 'attempts'])
          .where('id', '=', second)
          .executeTakeFirstOrThrow();
        const jobs = await server.runtime.ctx.db
          .selectFrom(sql<{ run_at: Date }>`graphile_worker._private_jobs`.as('j'))
          .select('run_at')
          .where(sql<boolean>`payload::text like ${`%${second}%`}`)
          .execute();
        expect(row).toEqual({ status: 'queued', attempts: 0 });
        expect(jobs.length).toBe(1);
        expect(jobs[0].run_at.getTime()).toBeGreaterThan(Date.now() + 30 * 60_000);
      },
      { timeoutMs: 30_000 },
    );
    expect((await email(second)).events.map((e) => e.type)).not.toContain('deferred');
    expect(paced.messages).toHaveLength(1);
  }, 90_000);
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';
import { SIM_NETWORKS, type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';
import { workerProcesses } from '../helpers/worker-process.ts';

/**
 * A site's connection cap holds across worker processes (issue 46): three `posthorn worker`
 * processes on one PostgreSQL deliver to a site whose `max_connections` is 4; the site's server
 * counts its connections at once and never sees more than 4, and every message arrives once. Each
 * connection carries 2 messages and ends, so the cap is given back and taken again all the time: a
 * connection counted free when its QUIT is written (the server still holds it until the socket
 * closes), or a refresh that writes a count read before a take, would let a fifth one in.
 */

const SECRET = 'three-workers-test-secret-0123456789abcdef';
const MESSAGES = 240;
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-three-workers-'));
let net: SimInternet;
let capped: SimServer;
let server: TestServer;
let routes: string;
const workers = workerProcesses(() => ({ databaseUrl: server.databaseUrl, secret: SECRET }));

beforeAll(async () => {
  net = await startSimInternet({ lean: true });
  // answers each message after 40 ms, so connections stay busy and every worker wants more
  capped = await net.server('mx.capped.test', '127.0.0.95', { delayMs: 40 });
  net.mx('capped.test', [[10, 'mx.capped.test']]);
  routes = path.join(dir, 'routes.json');
  writeFileSync(
    routes,
    JSON.stringify({
      routes: {
        direct: {
          type: 'direct',
          port: net.port,
          allow_networks: SIM_NETWORKS,
          sites: { 'mx.capped.test': { max_connections: 4, messages_per_connection: 2 } },
        },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  const env = { POSTHORN_ROUTES: routes, POSTHORN_SMTP_RELAY: '', POSTHORN_DNS_SERVERS: net.dns.address };
  server = await startTestServer({ ...env, POSTHORN_SECRET: SECRET }, ['api']);
  for (let i = 0; i < 3; i++) workers.start('', env);
}, 60_000);

afterAll(async () => {
  await workers.stopAll('SIGTERM');
  await server?.close();
  await net?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('three worker processes and a site that takes 4 connections', () => {
  it('never open more than 4 at once between them, and deliver every message once', async () => {
    const account = await unlimitedSender(server);
    const ids: string[] = [];
    for (let b = 0; b < MESSAGES / 60; b++) {
      const batch = Array.from({ length: 60 }, (_, i) => ({
        from: 'Capped <onboarding@posthorn.localhost>',
        to: `reader${b * 60 + i}@capped.test`,
        subject: `message ${b * 60 + i}`,
        text: 'hello',
      }));
      const res = await server.call('POST', '/v1/emails/batch', {
        key: account.project_key.key,
        body: batch,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(...res.body.data.map((d: { id: string }) => d.id));
    }
    await eventually(
      async () => {
        const { rows } = await server.runtime.ctx.pool.query<{ n: number }>(
          `select count(*)::int as n from emails where id = any($1::uuid[]) and status = 'delivered'`,
          [ids],
        );
        expect(rows[0].n).toBe(MESSAGES);
      },
      { timeoutMs: 120_000, intervalMs: 250, message: 'not every message was delivered' },
    );
    const received = capped.messages.map((m) => m.messageId);
    expect(new Set(received).size).toBe(MESSAGES);
    expect(received).toHaveLength(MESSAGES);
    console.log(
      `three workers: ${MESSAGES} delivered once each, at most ${capped.maxConcurrent} connections at once (cap 4), ${capped.accepted} connections in all`,
    );
    expect(capped.maxConcurrent).toBeLessThanOrEqual(4);
    expect(capped.maxConcurrent).toBeGreaterThan(1);
  }, 180_000);
});

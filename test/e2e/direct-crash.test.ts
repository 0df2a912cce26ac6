import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { waitForAllStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SIM_NETWORKS, type SimInternet, startSimInternet } from '../helpers/sim-internet.ts';
import { workerProcesses } from '../helpers/worker-process.ts';

/**
 * A worker killed with SIGKILL during direct delivery (issue 32): the API in this process, the
 * worker in a process of its own delivering to the MX hosts of a simulated internet. After a
 * restart every accepted message reaches its recipient's server; duplicates are counted and share
 * their Message-ID.
 */

const SECRET = 'direct-crash-test-secret-0123456789abcdef';
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-direct-crash-'));
let server: TestServer;
let net: SimInternet;
let routesFile: string;
const workers = workerProcesses(() => ({ databaseUrl: server.databaseUrl, secret: SECRET }));
const startWorker = () =>
  workers.start('', {
    POSTHORN_ROUTES: routesFile,
    POSTHORN_DNS_SERVERS: net.dns.address,
    POSTHORN_STALE_WORKER_SECONDS: '2',
    POSTHORN_WORKER_CONCURRENCY: '10',
  });

beforeAll(async () => {
  net = await startSimInternet();
  // three providers, each hosting ten domains, slow enough to keep messages in flight
  for (let p = 0; p < 3; p++) {
    await net.server(`mx.provider${p}.test`, `127.0.0.${50 + p}`, { delayMs: 20 });
    for (let d = 0; d < 10; d++) net.mx(`d${p}-${d}.test`, [[10, `mx.provider${p}.test`]]);
  }
  routesFile = path.join(dir, 'routes.json');
  writeFileSync(
    routesFile,
    JSON.stringify({
      routes: {
        direct: { type: 'direct', port: net.port, timeout_seconds: 10, allow_networks: SIM_NETWORKS },
      },
      rules: [{ match: {}, routes: ['direct'] }],
    }),
  );
  server = await startTestServer({ POSTHORN_SECRET: SECRET }, ['api']);
}, 60_000);

afterAll(async () => {
  await workers.stopAll();
  await server?.close();
  await net?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a worker killed with SIGKILL during direct delivery', () => {
  it('loses nothing: every accepted message reaches its MX after a restart, duplicates keep their Message-ID', async () => {
    // the sign-up code goes through the test server's own sink, by a worker relaying there
    const signup = workers.start(server.sink.url, { POSTHORN_STALE_WORKER_SECONDS: '2' });
    const account = await server.signupConfirmed();
    await workers.stop(signup, 'SIGTERM');
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
    const key = account.project_key.key;
    const first = startWorker();
    const total = 300;
    const ids: string[] = [];
    for (let b = 0; b < total / 100; b++) {
      const batch = Array.from({ length: 100 }, (_, i) => {
        const n = b * 100 + i;
        return {
          from: 'Crash Test <onboarding@posthorn.localhost>',
          to: `rcpt${n}@d${n % 3}-${n % 10}.test`,
          subject: `message ${n}`,
          text: 'hello',
        };
      });
      const res = await server.call('POST', '/v1/emails/batch', { key, body: batch });
      expect(res.status).toBe(200);
      ids.push(...res.body.data.map((d: { id: string }) => d.id));
    }
    const messageIds = new Set(
      (
        await server.runtime.ctx.db.selectFrom('emails').select('message_id').where('id', 'in', ids).execute()
      ).map((r) => r.message_id),
    );
    const received = () => net.servers.flatMap((s) => s.messages);
    await eventually(() => expect(received().length).toBeGreaterThanOrEqual(30), { timeoutMs: 60_000 });
    first.kill('SIGKILL');
    await new Promise((resolve) => first.on('exit', resolve));
    const beforeRestart = received().length;
    expect(beforeRestart).toBeLessThan(total);

    startWorker();
    await waitForAllStatus(server, ids, 'delivered', 'the second worker did not deliver every email');

    const got = received().map((m) => /^Message-ID: (.+)$/im.exec(m.raw.toString())?.[1].trim() ?? '');
    const unique = new Set(got);
    const lost = [...messageIds].filter((id) => !unique.has(id));
    expect(lost).toEqual([]);
    // every duplicate is a resend of an accepted message under its original Message-ID
    for (const messageId of got) expect(messageIds.has(messageId)).toBe(true);
    console.log(
      `direct crash: ${total} accepted, ${beforeRestart} delivered before SIGKILL, ${got.length} received in all, ${got.length - unique.size} duplicates (same Message-ID), ${lost.length} lost`,
    );
  }, 240_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { waitForAllStatus } from '../helpers/emails.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { workerProcesses } from '../helpers/worker-process.ts';

const SECRET = 'worker-crash-test-secret-0123456789abcdef';

let server: TestServer;
const workers = workerProcesses(() => ({ databaseUrl: server.databaseUrl, secret: SECRET }));
const startWorker = () =>
  workers.start(server.sink.url, { POSTHORN_STALE_WORKER_SECONDS: '2', POSTHORN_WORKER_CONCURRENCY: '6' });

beforeAll(async () => {
  // the API in this process; the worker in a separate process we can kill
  server = await startTestServer({ POSTHORN_SECRET: SECRET }, ['api']);
});

afterAll(async () => {
  await workers.stopAll();
  await server?.close();
});

describe('a worker killed with SIGKILL while messages are in flight', () => {
  it('loses nothing: after a restart every accepted message reaches the sink, duplicates keep their Message-ID', async () => {
    const first = startWorker();
    const account = await server.signupConfirmed(); // the code email goes through the worker process
    const key = account.project_key.key;
    // the free plan caps the shared domain at 100 a day; this test sends 300
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
    server.sink.delayMs = 20; // keep messages in flight
    const before = server.sink.messages.length;
    const total = 300;
    const ids: string[] = [];
    for (let b = 0; b < total / 100; b++) {
      const batch = Array.from({ length: 100 }, (_, i) => ({
        from: 'Crash Test <onboarding@posthorn.localhost>',
        to: `rcpt${b * 100 + i}@example.org`,
        subject: `message ${b * 100 + i}`,
        text: 'hello',
      }));
      const res = await server.call('POST', '/v1/emails/batch', { key, body: batch });
      expect(res.status).toBe(200);
      ids.push(...res.body.data.map((d: { id: string }) => d.id));
    }
    const messageIds = new Map(
      (
        await server.runtime.ctx.db
          .selectFrom('emails')
          .select(['id', 'message_id'])
          .where('id', 'in', ids)
          .execute()
      ).map((r) => [r.message_id, r.id]),
    );

    await server.sink.waitFor(() => server.sink.messages.length >= before + 30, 60_000);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.on('exit', resolve));
    const deliveredBeforeRestart = server.sink.messages.length - before;
    expect(deliveredBeforeRestart).toBeLessThan(total);

    startWorker();
    await waitForAllStatus(server, ids, 'sent', 'the second worker did not send every email');

    const received = server.sink.messages.slice(before).map((m) => m.parsed.messageId as string);
    const unique = new Set(received);
    for (const messageId of messageIds.keys()) expect(unique.has(messageId)).toBe(true);
    // every duplicate is a resend of an accepted message under its original Message-ID
    for (const messageId of received) expect(messageIds.has(messageId)).toBe(true);
    const duplicates = received.length - unique.size;
    console.log(
      `worker crash: ${total} accepted, ${deliveredBeforeRestart} delivered before SIGKILL, ${received.length} received in all, ${duplicates} duplicates (same Message-ID), 0 lost`,
    );
  }, 240_000);
});

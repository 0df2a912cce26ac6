import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;

beforeAll(async () => {
  // a worker is presumed dead after 1 s without a heartbeat: a healthy one must never be
  server = await startTestServer({ POSTHORN_STALE_WORKER_SECONDS: '1' });
  account = await server.signupConfirmed();
});
afterAll(() => server?.close());

describe('a job that runs longer than the stale-worker time', () => {
  it('is not taken from its live worker and run again', async () => {
    server.sink.delayMs = 4_000; // the relay takes 4 s to accept: the delivery job runs that long
    const res = await server.call('POST', '/v1/emails', {
      key: account.project_key.key,
      body: { from: FROM, to: 'slow@example.org', subject: 'Slow relay', text: 'x' },
    });
    expect(res.status).toBe(200);
    const email = await waitForStatus(server, account.project_key.key, res.body.id, 'sent');
    await new Promise((r) => setTimeout(r, 4_500)); // time for a wrongly released job to deliver again
    server.sink.delayMs = 0;
    const copies = server.sink.messages.filter((m) => m.parsed.messageId === email.message_id);
    expect(copies).toHaveLength(1);
  }, 30_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
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
    // every run of a delivery job, as the worker reports it (this is the only email sent here;
    // transactional mail is delivered by its own task, deliver_transactional)
    const runs = { started: 0, finished: 0 };
    const delivery = new Set(['deliver_email', 'deliver_transactional']);
    const events = server.runtime.worker?.events;
    if (!events) throw new Error('the test server runs no worker');
    events.on('job:start', ({ job }) => {
      if (delivery.has(job.task_identifier)) runs.started++;
    });
    events.on('job:complete', ({ job }) => {
      if (delivery.has(job.task_identifier)) runs.finished++;
    });
    const res = await server.call('POST', '/v1/emails', {
      key: account.project_key.key,
      body: { from: FROM, to: 'slow@example.org', subject: 'Slow relay', text: 'x' },
    });
    expect(res.status).toBe(200);
    const email = await waitForStatus(server, account.project_key.key, res.body.id, 'sent');
    // a job wrongly released after 1 s is taken again within the worker's 1 s poll, while the first
    // run still waits on the relay: so wait until every run that started has finished, then count
    await eventually(() => expect(runs.finished).toBe(runs.started), {
      timeoutMs: 15_000,
      message: 'a delivery run is still going',
    });
    server.sink.delayMs = 0;
    expect(runs.started).toBe(1);
    const copies = server.sink.messages.filter((m) => m.parsed.messageId === email.message_id);
    expect(copies).toHaveLength(1);
  }, 30_000);
});

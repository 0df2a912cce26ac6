import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  // four workers: two run every job, one transactional deliveries only, one the event path only
  server = await startTestServer({ POSTHORN_WORKER_CONCURRENCY: '4', POSTHORN_TRANSACTIONAL_WORKERS: '1' });
  account = await marketingAccount(server, 'Kept Workers Tests Ltd, 3 Mill Lane, Manchester M1 1AA');
  key = account.project_key.key;
}, 60_000);
afterAll(async () => {
  if (server) server.sink.hold = undefined;
  await server?.close();
});

async function track(email: string) {
  const res = await server.call('POST', '/v1/events', { key, body: { email, event: 'purchase' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function flowEmailOf(email: string): Promise<string | undefined> {
  const { rows } = await server.runtime.ctx.pool.query(
    `select e.id from emails e join contacts c on c.id = e.contact_id
      where c.email = $1 and e.flow_id is not null`,
    [email],
  );
  return rows[0]?.id;
}

describe('the workers kept beside the pool that runs every job', () => {
  it('start a flow from an event and deliver transactional mail while flow deliveries hold every other worker', async () => {
    const worker = server.runtime.worker;
    if (!worker) throw new Error('the test server runs no worker');
    expect(worker.shares).toMatchObject({ every: 2, transactional: 1, eventPath: 1 });
    const created = await server.call('POST', '/v1/flows', {
      key,
      body: {
        name: 'On purchase',
        trigger: { type: 'event', event: 'purchase' },
        steps: [{ type: 'send', subject: 'Thanks', html: '<p>Thank you for your order</p>' }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect((await server.call('POST', `/v1/flows/${created.body.id}/activate`, { key })).status).toBe(200);

    // the relay answers no message to a holder until released: each such delivery holds its worker
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    server.sink.hold = (to) => (to.some((a) => a.startsWith('holder-')) ? released : undefined);
    const delivering = new Set<string>();
    worker.events.on('job:start', ({ job }) => {
      if (job.task_identifier === 'deliver_email') delivering.add(job.id);
    });
    worker.events.on('job:complete', ({ job }) => delivering.delete(job.id));
    for (let i = 1; i <= worker.shares.every; i++) {
      await track(`holder-${i}@kept-workers.example`);
      await eventually(() => expect(delivering.size).toBe(i), {
        timeoutMs: 20_000,
        message: `the delivery of holder ${i} never started`,
      });
    }

    // every worker that runs every job now waits on the relay: the event's outbox drain, its
    // announcement and the flow's round must run on the event path's worker
    await track('probe@kept-workers.example');
    await eventually(
      async () => {
        if (!(await flowEmailOf('probe@kept-workers.example')))
          throw new Error('no email row for the probe yet');
      },
      { timeoutMs: 20_000, message: "the probe's flow never wrote its email while deliveries were held" },
    );
    // and a password reset goes out through the transactional worker
    const reset = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'reset@kept-workers.example', subject: 'Reset your password', text: 'x' },
    });
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    await server.sink.waitFor((m) => m.to.includes('reset@kept-workers.example'), 20_000);
    expect(delivering.size).toBe(worker.shares.every); // none of the holders was let go meanwhile

    release();
    server.sink.hold = undefined;
    const sent = await server.sink.waitFor((m) => m.to.includes('probe@kept-workers.example'), 30_000);
    expect(sent.parsed.subject).toBe('Thanks');
  }, 90_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.ts';
import { marketingAccount, type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let account: SignupResult;
let key: string;

beforeAll(async () => {
  // three workers, none kept for transactional mail: two run every job, one the event path
  server = await startTestServer({ POSTHORN_WORKER_CONCURRENCY: '3', POSTHORN_TRANSACTIONAL_WORKERS: '0' });
  account = await marketingAccount(server, 'Event Path Tests Ltd, 3 Mill Lane, Manchester M1 1AA');
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

describe('the worker kept for the event path', () => {
  it('starts a flow from an event while deliveries hold every worker that runs every job', async () => {
    const worker = server.runtime.worker;
    if (!worker) throw new Error('the test server runs no worker');
    expect(worker.shares).toMatchObject({ every: 2, eventPath: 1 });
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

    // the relay answers no message until released: each delivery job started holds its worker
    let release = () => {};
    server.sink.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const delivering = new Set<string>();
    worker.events.on('job:start', ({ job }) => {
      if (job.task_identifier === 'deliver_email') delivering.add(job.id);
    });
    worker.events.on('job:complete', ({ job }) => delivering.delete(job.id));
    for (let i = 1; i <= worker.shares.every; i++) {
      await track(`holder-${i}@event-path.example`);
      await eventually(() => expect(delivering.size).toBe(i), {
        timeoutMs: 20_000,
        message: `the delivery of holder ${i} never started`,
      });
    }

    // every worker that runs every job now waits on the relay: the event's outbox drain, its
    // announcement and the flow's round must run on the kept one
    await track('probe@event-path.example');
    const probe = await eventually(
      async () => {
        const id = await flowEmailOf('probe@event-path.example');
        if (!id) throw new Error('no email row for the probe yet');
        return id;
      },
      { timeoutMs: 20_000, message: "the probe's flow never wrote its email while deliveries were held" },
    );
    expect(delivering.size).toBe(worker.shares.every); // none of them was let go meanwhile

    release();
    server.sink.hold = undefined;
    const sent = await server.sink.waitFor((m) => m.to.includes('probe@event-path.example'), 30_000);
    expect(sent.parsed.subject).toBe('Thanks');
    expect(probe).toBeTruthy();
  }, 90_000);
});

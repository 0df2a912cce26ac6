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
  it('start a flow from an event and deliver transactional mail while more flow deliveries than workers are in flight, none holding a worker', async () => {
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

    // the relay answers no message to a holder until released. Deliveries are held by the
    // process's scheduler, not by a job: more holders than the process has workers are all in
    // flight at once, and every delivery job has ended meanwhile
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = new Set<string>();
    server.sink.hold = (to) => {
      const holder = to.find((a) => a.startsWith('holder-'));
      if (!holder) return undefined;
      held.add(holder);
      return released;
    };
    const delivering = new Set<string>();
    worker.events.on('job:start', ({ job }) => {
      if (job.task_identifier === 'deliver_email') delivering.add(job.id);
    });
    worker.events.on('job:complete', ({ job }) => delivering.delete(job.id));
    const holders = 2 * (worker.shares.every + worker.shares.transactional + worker.shares.eventPath);
    for (let i = 1; i <= holders; i++) await track(`holder-${i}@kept-workers.example`);
    await eventually(() => expect(held.size).toBe(holders), {
      timeoutMs: 30_000,
      message: 'not every holder was in flight at once',
    });
    await eventually(() => expect(delivering.size).toBe(0), {
      timeoutMs: 10_000,
      message: 'a delivery job still holds its worker while its message is in flight',
    });
    expect(worker.scheduler.holding.inFlight).toBeGreaterThanOrEqual(holders);

    // with every holder in flight, an event still starts its flow and writes its email
    await track('probe@kept-workers.example');
    await eventually(
      async () => {
        if (!(await flowEmailOf('probe@kept-workers.example')))
          throw new Error('no email row for the probe yet');
      },
      { timeoutMs: 20_000, message: "the probe's flow never wrote its email while deliveries were held" },
    );
    // and a password reset goes out beside the held deliveries
    const reset = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'reset@kept-workers.example', subject: 'Reset your password', text: 'x' },
    });
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    await server.sink.waitFor((m) => m.to.includes('reset@kept-workers.example'), 20_000);
    expect(held.size).toBe(holders);
    expect(server.sink.messages.some((m) => m.to.some((a) => a.startsWith('holder-')))).toBe(false);

    release();
    server.sink.hold = undefined;
    const sent = await server.sink.waitFor((m) => m.to.includes('probe@kept-workers.example'), 30_000);
    expect(sent.parsed.subject).toBe('Thanks');
  }, 90_000);
});

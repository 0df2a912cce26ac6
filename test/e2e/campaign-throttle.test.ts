import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { insertReaders } from '../helpers/audience.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startTimingSink, type TimedMessage, type TimingSink } from '../helpers/timing-sink.ts';
import { workerProcesses } from '../helpers/worker-process.ts';

const SECRET = 'campaign-throttle-test-secret-0123456789ab';
const RATE = 50;
const RECIPIENTS = 400;

let server: TestServer;
/** Arrival times are noted by a sink in its own process, where nothing else competes for the clock. */
let sink: TimingSink;
const workers = workerProcesses(() => ({ databaseUrl: server.databaseUrl, secret: SECRET }));
const startWorker = (relay: string) => workers.start(relay, { POSTHORN_WORKER_CONCURRENCY: '6' });

/** The most messages whose arrival falls in any window [t, t + 1 s), over every start t. */
function busiestSecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last] - sorted[first] >= 1000) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

beforeAll(async () => {
  // the API in this process; two workers in their own processes share the rate through PostgreSQL
  server = await startTestServer({ POSTHORN_SECRET: SECRET }, ['api']);
  sink = await startTimingSink();
});

afterAll(async () => {
  await workers.stopAll('SIGTERM');
  await server?.close();
  await sink?.close();
});

describe('a throttled campaign with two worker processes', () => {
  it(`never delivers more than ${RATE} messages in any one-second window (±1), and sends to everyone`, async () => {
    // the sign-up code goes through a worker to the test server's own sink, which reads it
    const signupWorker = startWorker(server.sink.url);
    const account = await server.signupConfirmed();
    signupWorker.kill('SIGTERM');
    await new Promise((resolve) => signupWorker.once('exit', resolve));
    startWorker(sink.url);
    startWorker(sink.url);
    const key = account.project_key.key;
    await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
    const footer = await server.call('PATCH', '/v1/me/footer', {
      key,
      body: { address: 'Throttle Tests Ltd, 9 Mill Lane, York YO1 7HH' },
    });
    expect(footer.status).toBe(200);
    const rate = await server.call('PATCH', '/v1/me/sending-rate', { key, body: { per_second: RATE } });
    expect(rate.body).toEqual({ object: 'sending_rate', per_second: RATE, per_hour: null });
    const list = (await server.call('POST', '/v1/lists', { key, body: { name: 'Throttled' } })).body.id;
    await insertReaders(server.runtime.ctx.db, {
      projectId: account.project.id,
      listId: list,
      count: RECIPIENTS,
      domain: 'throttle.example',
    });

    const created = await server.call('POST', '/v1/campaigns', {
      key,
      body: {
        name: 'Throttled',
        from: FROM,
        subject: 'Paced news for {{ contact.first_name }}',
        html: '<p>Hello {{ contact.first_name }}</p>',
        list_ids: [list],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id;
    const ofCampaign = () => sink.messages.filter((m) => m.feedbackId?.includes(id));
    const arrived = (predicate: () => boolean, message: string) =>
      eventually(
        () => {
          if (!predicate()) throw new Error(`${message} (${sink.messages.length} messages so far)`);
        },
        { timeoutMs: 30_000, intervalMs: 50, message },
      );
    // a transactional message sent mid-campaign is not held back by the campaign's rate
    const started = await server.call('POST', `/v1/campaigns/${id}/send`, { key });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await arrived(() => ofCampaign().length >= 2 * RATE, 'the campaign did not start arriving');
    const reset = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'someone@throttle.example', subject: 'Password reset', text: 'Your link' },
    });
    expect(reset.status).toBe(200);
    const answeredAt = Date.now();
    await arrived(
      () => sink.messages.some((m) => m.subject === 'Password reset'),
      'the transactional message did not arrive',
    );
    const resetMessage = sink.messages.find((m) => m.subject === 'Password reset') as TimedMessage;

    await waitForCampaignStatus(server, key, id, 'sent');
    const messages = ofCampaign();
    const recipients = new Set(messages.flatMap((m) => m.to));
    expect(recipients.size).toBe(RECIPIENTS);
    const times = messages.map((m) => m.at);
    const busiest = busiestSecond(times);
    const spanSeconds = (Math.max(...times) - Math.min(...times)) / 1000;
    console.log(
      `throttle: ${messages.length} messages over ${spanSeconds.toFixed(1)} s with two workers, busiest one-second window ${busiest} (rate ${RATE}/s); transactional mail arrived ${resetMessage.at - answeredAt} ms after its answer`,
    );
    expect(busiest).toBeLessThanOrEqual(RATE + 1);
    // and it was throttled, not merely slow: the whole send took about RECIPIENTS / RATE seconds
    expect(spanSeconds).toBeGreaterThanOrEqual((RECIPIENTS - RATE - 1) / RATE);
    expect(resetMessage.at).toBeLessThan(Math.max(...times));
  }, 120_000);
});

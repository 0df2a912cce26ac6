import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryScheduler } from '../../src/domain/sending/scheduler.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer, unlimitedSender } from '../helpers/server.ts';

/**
 * The delivery scheduler's room (issue 46): jobs woken together never all take the same room, bulk
 * mail never passes its share of what a process holds waiting, and transactional mail finds the
 * rest. Real rows on the test database, claimed for real; the delivery itself is held by the test.
 */

let server: TestServer;
const ids: string[] = [];

beforeAll(async () => {
  // the API alone: the accepted messages stay queued for the test's own scheduler to claim
  server = await startTestServer({}, ['api']);
  const account = await unlimitedSender(server);
  for (let b = 0; b < 3; b++) {
    const batch = Array.from({ length: 61 }, (_, i) => ({
      from: FROM,
      to: `reader${b * 61 + i}@example.org`,
      subject: 'x',
      text: 'x',
    }));
    const res = await server.call('POST', '/v1/emails/batch', { key: account.project_key.key, body: batch });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...res.body.data.map((d: { id: string }) => d.id));
  }
}, 60_000);

afterAll(() => server?.close());

describe('the delivery scheduler', () => {
  it('gives bulk mail at most its share of the room, counted as it is taken, and transactional mail the rest', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const delivered: number[] = [];
    const scheduler = new DeliveryScheduler(
      { ctx: server.runtime.ctx, routes: server.runtime.routes },
      async (_deps, rows) => {
        await released;
        delivered.push(rows.length);
        return rows.length;
      },
      { maxWaiting: 100, maxInFlight: 10_000, heartbeats: new Set(), log: pino({ level: 'silent' }) },
    );
    // six bulk jobs of 20 at once: the share is 80 of 100, so four are claimed and two wait
    const bulk = Array.from({ length: 6 }, (_, i) => scheduler.take(ids.slice(i * 20, i * 20 + 20), true));
    let settled = 0;
    for (const b of bulk) void b.then(() => settled++);
    // the other two wait until a claimed batch is done, and none is until the test releases them
    await eventually(() => expect(settled).toBe(4), { timeoutMs: 10_000 });
    expect(scheduler.holding.waiting).toBe(80);
    // a transactional job finds the room bulk mail may not take
    await expect(scheduler.take([ids[120]], false)).resolves.toBe(1);
    expect(scheduler.holding.waiting).toBe(81);
    expect(settled).toBe(4);
    release();
    await Promise.all(bulk);
    await scheduler.stop(10_000);
    expect(delivered.reduce((a, b) => a + b, 0)).toBe(121);
    expect(scheduler.holding).toEqual({ inFlight: 0, waiting: 0 });
  });

  it('gives back the room of each message as its answer is written: a message a silent site holds keeps only its own', async () => {
    const silent = new Promise<never>(() => {});
    const scheduler = new DeliveryScheduler(
      { ctx: server.runtime.ctx, routes: server.runtime.routes },
      async (_deps, rows, progress) => {
        // every message of the batch answered but the first, which waits on a site that never answers
        progress.recorded?.(rows.slice(1).map((r) => r.id));
        return silent;
      },
      { maxWaiting: 50, maxInFlight: 60, heartbeats: new Set(), log: pino({ level: 'silent' }) },
    );
    // four bulk jobs of 15, one after the other: each batch keeps one message, so all four find
    // room (bulk's share is 40 waiting and 48 in flight), where whole batches held would stop the third
    for (let i = 0; i < 4; i++)
      await expect(scheduler.take(ids.slice(122 + i * 15, 122 + i * 15 + 15), true)).resolves.toBe(15);
    expect(scheduler.holding).toEqual({ inFlight: 4, waiting: 4 });
    await scheduler.stop(50);
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { Breaker } from '../../src/domain/shaping/breaker.ts';
import { createTestDatabase } from '../helpers/database.ts';

/**
 * The breaker's view across a read of PostgreSQL (issue 33): a stop this process decided stands
 * while its write is on its way, and a stop closed in the database (a resume) ends it.
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let handle: DatabaseHandle;
let clock = 1_000_000;
const settings = { minMessages: 10, bounceWarn: 0, bounceStop: 5, complaintWarn: 0, complaintStop: 0 };
const bounced = { sent: 0, bounced: 1, complained: 0 };

beforeAll(async () => {
  database = await createTestDatabase();
  handle = connectDatabase(database.url, 2);
});
afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

describe('a stop across reads of the database', () => {
  it('stands while its trip is not written yet, and then goes by what the database says', async () => {
    const breaker = new Breaker(settings, () => clock);
    const campaign = randomUUID();
    const watched = [{ scope: 'campaign' as const, id: campaign, projectId: randomUUID() }];
    await breaker.seed(handle.db, watched);
    for (let i = 0; i < 10; i++) breaker.observe('campaign', campaign, watched[0].projectId, bounced);
    expect(breaker.stopped('campaign', campaign)).toBe(true);
    // read again before the batch's transaction committed the trip: still stopped
    clock += 6_000;
    await breaker.seed(handle.db, watched);
    expect(breaker.stopped('campaign', campaign)).toBe(true);
    // its transaction committed (here: no trip row, as after a resume): the database decides
    breaker.confirm([
      {
        scope: 'campaign',
        key: campaign,
        projectId: watched[0].projectId,
        level: 'stop',
        metric: 'hard_bounce_rate',
        rate: 100,
        threshold: 5,
        messages: 10,
        reason: '',
      },
    ]);
    clock += 6_000;
    await breaker.seed(handle.db, watched);
    expect(breaker.stopped('campaign', campaign)).toBe(false);
  });

  it('gives way to the database a minute after a stop whose write never came', async () => {
    const breaker = new Breaker(settings, () => clock);
    const campaign = randomUUID();
    const watched = [{ scope: 'campaign' as const, id: campaign, projectId: randomUUID() }];
    for (let i = 0; i < 10; i++) breaker.observe('campaign', campaign, watched[0].projectId, bounced);
    clock += 61_000;
    await breaker.seed(handle.db, watched);
    expect(breaker.stopped('campaign', campaign)).toBe(false);
  });

  it('raises a trip again after a write that failed gave it back', () => {
    const breaker = new Breaker(settings, () => clock);
    const campaign = randomUUID();
    const trips = [];
    for (let i = 0; i < 10; i++) trips.push(...breaker.observe('campaign', campaign, 'p', bounced));
    expect(trips.map((t) => t.level)).toEqual(['stop']);
    breaker.giveBack(breaker.takeUnwritten(), trips);
    expect(breaker.stopped('campaign', campaign)).toBe(false);
    expect(breaker.observe('campaign', campaign, 'p', bounced).map((t) => t.level)).toEqual(['stop']);
  });
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { sitePacer, takeSlots } from '../../src/domain/shaping/pace.ts';
import { createTestDatabase } from '../helpers/database.ts';

/**
 * Slots taken in runs (one statement for a process's next several messages): a run is spaced by
 * the strictest interval, stops at the horizon, and moves every bucket past its last slot, so runs
 * taken one after the other (or by two processes) never overlap and a window never holds more than
 * the rate.
 */
let database: { url: string; drop(): Promise<void> };
let handle: DatabaseHandle;

beforeAll(async () => {
  database = await createTestDatabase();
  handle = connectDatabase(database.url, 4);
});
afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

const fresh = async (...keys: string[]) => {
  await sql`insert into send_rates (bucket, next_at) select k, '-infinity' from unnest(${keys}::text[]) k`.execute(
    handle.db,
  );
};
// times are compared to 0.01 ms: PostgreSQL keeps microseconds, and milliseconds since 1970 in a
// double are rounded to a few ten-thousandths
const nextAt = async (key: string) =>
  Number(
    (
      await sql<{
        ms: number;
      }>`select extract(epoch from next_at) * 1000 as ms from send_rates where bucket = ${key}`.execute(
        handle.db,
      )
    ).rows[0].ms,
  );

describe('takeSlots', () => {
  it('takes a run of slots spaced by the strictest interval, and moves each bucket past the last by its own', async () => {
    await fresh('run:a', 'run:b');
    const buckets = [
      { key: 'run:a', intervalMs: 10 },
      { key: 'run:b', intervalMs: 4 },
    ];
    const first = await takeSlots(handle.db, buckets, 5);
    expect(first.taken).toBe(5);
    // the run's slots are first.atMs + i * 10; each bucket's next time is the last slot plus its own interval
    const a = await nextAt('run:a');
    const b = await nextAt('run:b');
    expect(a - b).toBeCloseTo(6, 2);
    // the next run starts where the strictest bucket allows: right after the first run, never inside it
    const second = await takeSlots(handle.db, buckets, 3);
    expect(second.taken).toBe(3);
    expect(second.dbAtMs - first.dbAtMs).toBeCloseTo(5 * 10, 2);
  });

  it('stops a run at the horizon, and takes none (answering when one is free) once the bucket is past it', async () => {
    await fresh('run:h');
    const buckets = [{ key: 'run:h', intervalMs: 100 }];
    // a horizon of 1 s holds 11 slots 100 ms apart from now (the first now, the last 1 s on)
    const run = await takeSlots(handle.db, buckets, 50, 100, 1_000);
    expect(run.taken).toBeGreaterThanOrEqual(10);
    expect(run.taken).toBeLessThanOrEqual(11);
    const none = await takeSlots(handle.db, buckets, 5, 100, 1_000);
    expect(none.taken).toBe(0);
    // the bucket did not move: the moment given is when its next slot is
    expect(none.dbAtMs).toBeCloseTo(run.dbAtMs + run.taken * 100, 2);
    expect(await nextAt('run:h')).toBeGreaterThan(Date.now() + 900);
  });

  it('gives two processes taking runs at once slots that never coincide', async () => {
    await fresh('run:p');
    const buckets = [{ key: 'run:p', intervalMs: 2 }];
    const other = connectDatabase(database.url, 2);
    try {
      const runs = await Promise.all(
        Array.from({ length: 20 }, (_, i) => takeSlots(i % 2 ? other.db : handle.db, buckets, 8, 2, 10_000)),
      );
      const slots = runs
        .flatMap((r) => Array.from({ length: r.taken }, (_, i) => r.dbAtMs + i * 2))
        .sort((x, y) => x - y);
      expect(slots).toHaveLength(160);
      // in the database's clock, which decides: every slot at least one interval after the one before
      // (to its microsecond, less the rounding of milliseconds since 1970 in a double)
      for (let i = 1; i < slots.length; i++)
        expect(slots[i] - slots[i - 1]).toBeGreaterThanOrEqual(2 - 0.002);
    } finally {
      await other.close();
    }
  });
});

describe('sitePacer', () => {
  it("serves a site's messages that come at once with runs, every one its own slot, within the horizon", async () => {
    // two processes' pacers on one bucket (a slot every 100 ms), 15 messages each at once, 1 s ahead
    const other = connectDatabase(database.url, 2);
    try {
      const paces = [sitePacer(handle.db), sitePacer(other.db)];
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) => paces[i % 2]('site:direct:mx.example:any', 100, 1_000)),
      );
      const taken = answers.filter((a) => a.taken);
      // a second's worth (10 or 11 slots, as the first may fall at once): the rest are told when
      // the next is free, never given a slot of their own beyond the horizon
      expect(taken.length).toBeGreaterThanOrEqual(10);
      expect(taken.length).toBeLessThanOrEqual(11);
      const last = Math.max(...taken.map((a) => a.atMs));
      for (const a of answers.filter((x) => !x.taken)) expect(a.atMs).toBeGreaterThan(last);
      // the bucket moved one interval past its last slot, whatever the runs: none was taken twice
      expect(await nextAt('site:direct:mx.example:any')).toBeGreaterThan(Date.now() + 800);
    } finally {
      await other.close();
    }
  });

  it('gives each waiting message a distinct slot in order when the horizon has room for all', async () => {
    const pace = sitePacer(handle.db);
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => pace('site:direct:wide:any', 5, 60_000)),
    );
    expect(answers.every((a) => a.taken)).toBe(true);
    const times = answers.map((a) => a.atMs).sort((x, y) => x - y);
    // 40 slots 5 ms apart span 195 ms in the database's clock; the local clock's estimate of it
    // moves by less than a millisecond within one run
    expect(times[39] - times[0]).toBeGreaterThan(190);
    expect(new Set(times).size).toBe(40);
  });
});

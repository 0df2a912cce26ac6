import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { takeSlots } from '../../src/domain/shaping/pace.ts';
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

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/database.ts';
import { RateLimiter } from '../../src/domain/keys/rate-limit.ts';
import { createTestDatabase } from '../helpers/database.ts';

/**
 * The per-project request limit's windows on a real PostgreSQL (domain/keys/rate-limit.ts): a
 * request whose second ended before its count reached the database (two API nodes, a busy
 * machine) counts in the newer window; it used to start its old window again, so the newer
 * window's count began over and a burst across a second's end admitted more than the limit
 * (test/e2e/several-nodes: 21 of 30 admitted in two windows of 10).
 */

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: ReturnType<typeof connectDatabase>;

beforeAll(async () => {
  database = await createTestDatabase();
  db = connectDatabase(database.url, 2);
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
});

async function admitted(limiter: RateLimiter, project: string, at: number): Promise<boolean> {
  try {
    await limiter.take(project, at);
    return true;
  } catch {
    return false;
  }
}

describe('request rate windows', () => {
  it('counts a late request of an ended second in the newer window, never starting the old one again', async () => {
    // two nodes: each refuses locally once it has seen a window exhausted, so each has its own limiter
    const nodeA = new RateLimiter(db.pool, 3);
    const nodeB = new RateLimiter(db.pool, 3);
    const project = randomUUID();
    const second = 1_800_000_000_000;
    const next = second + 1_000;
    expect(await admitted(nodeA, project, next)).toBe(true);
    expect(await admitted(nodeA, project, next + 1)).toBe(true);
    // node B's request began in the second before, and reaches the database only now
    expect(await admitted(nodeB, project, second + 999)).toBe(true);
    // the newer second has had three: the fourth is refused, on either node
    expect(await admitted(nodeA, project, next + 2)).toBe(false);
    expect(await admitted(new RateLimiter(db.pool, 3), project, next + 3)).toBe(false);
    // and the second after that starts afresh
    expect(await admitted(nodeB, project, next + 1_000)).toBe(true);
  });
});

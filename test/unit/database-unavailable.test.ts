import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/database.ts';
import { whileDatabaseUnavailable } from '../../src/db/patience.ts';

describe('isDatabaseUnavailable', () => {
  it('knows the errors of a database that is down, restarting or full, and nothing else', () => {
    const down = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('connect ENOENT /tmp/pg/.s.PGSQL.5432'), { code: 'ENOENT' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
    ];
    for (const err of down) expect(isDatabaseUnavailable(err), err.message).toBe(true);
    const other = [
      Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
      Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }),
      new Error('Cannot read properties of undefined'),
      null,
      'ECONNREFUSED',
    ];
    for (const err of other) expect(isDatabaseUnavailable(err), String(err)).toBe(false);
  });
});

describe('whileDatabaseUnavailable', () => {
  const refused = () =>
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

  it('tries again while the database is down and returns the first success, saying so once each way', async () => {
    let calls = 0;
    const said: string[] = [];
    const result = await whileDatabaseUnavailable(
      async () => {
        calls++;
        if (calls < 3) throw refused();
        return 'up';
      },
      { patienceMs: 10_000, onWait: () => said.push('wait'), onBack: () => said.push('back') },
    );
    expect(result).toBe('up');
    expect(calls).toBe(3);
    expect(said).toEqual(['wait', 'back']);
  });

  it('throws any other error at once, and the last one once its patience is spent or it is stopped', async () => {
    let calls = 0;
    const bad = Object.assign(new Error('relation "x" does not exist'), { code: '42P01' });
    await expect(
      whileDatabaseUnavailable(
        async () => {
          calls++;
          throw bad;
        },
        { patienceMs: 10_000 },
      ),
    ).rejects.toBe(bad);
    expect(calls).toBe(1);
    calls = 0;
    const alwaysRefused = async () => {
      calls++;
      throw refused();
    };
    await expect(whileDatabaseUnavailable(alwaysRefused, { patienceMs: 600 })).rejects.toThrow(
      /ECONNREFUSED/,
    );
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(calls).toBeLessThan(5);
    calls = 0;
    await expect(
      whileDatabaseUnavailable(alwaysRefused, { patienceMs: 10_000, stopped: () => calls >= 2 }),
    ).rejects.toThrow(/ECONNREFUSED/);
    expect(calls).toBe(2);
  });
});

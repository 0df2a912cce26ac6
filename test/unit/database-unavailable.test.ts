import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/database.ts';

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

import { describe, expect, it } from 'vitest';
import { workerShares } from '../../src/jobs/worker.ts';

describe('a worker process shares its jobs at once', () => {
  it('takes the transactional workers out of the total, never adds them', () => {
    expect(workerShares(10, 2)).toEqual({ every: 8, transactional: 2 });
    expect(workerShares(8, 2)).toEqual({ every: 6, transactional: 2 });
    expect(workerShares(8, 0)).toEqual({ every: 8, transactional: 0 });
  });

  it('always leaves one worker for every other job', () => {
    expect(workerShares(2, 2)).toEqual({ every: 1, transactional: 1 });
    expect(workerShares(3, 50)).toEqual({ every: 1, transactional: 2 });
    expect(workerShares(1, 2)).toEqual({ every: 1, transactional: 0 });
  });
});

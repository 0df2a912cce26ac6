import { describe, expect, it } from 'vitest';
import { workerShares } from '../../src/jobs/worker.ts';

describe('a worker process shares its jobs at once', () => {
  it("takes the transactional workers and the event path's one out of the total, never adds them", () => {
    expect(workerShares(10, 2)).toEqual({ every: 7, transactional: 2, eventPath: 1, warning: null });
    expect(workerShares(8, 2)).toEqual({ every: 5, transactional: 2, eventPath: 1, warning: null });
    expect(workerShares(8, 0)).toEqual({ every: 7, transactional: 0, eventPath: 1, warning: null });
  });

  it("keeps the event path's worker only when one is left for every other job beside it", () => {
    expect(workerShares(2, 0)).toEqual({ every: 1, transactional: 0, eventPath: 1, warning: null });
    expect(workerShares(3, 1)).toEqual({ every: 1, transactional: 1, eventPath: 1, warning: null });
    expect(workerShares(3, 2)).toMatchObject({ every: 1, transactional: 2, eventPath: 0 });
    expect(workerShares(1, 0)).toMatchObject({ every: 1, transactional: 0, eventPath: 0 });
  });

  it('always leaves one worker for every other job, and says so when that takes from the share asked', () => {
    expect(workerShares(2, 2)).toMatchObject({ every: 1, transactional: 1, eventPath: 0 });
    expect(workerShares(3, 50)).toMatchObject({ every: 1, transactional: 2 });
    expect(workerShares(1, 2)).toMatchObject({ every: 1, transactional: 0 });
    expect(workerShares(3, 50).warning).toBe(
      'POSTHORN_TRANSACTIONAL_WORKERS=50 is more than POSTHORN_WORKER_CONCURRENCY=3 leaves (one worker always runs every other job): 2 kept for transactional mail',
    );
    expect(workerShares(1, 2).warning).toContain('0 kept for transactional mail');
  });
});

import { describe, expect, it } from 'vitest';
import { clockOffsetMs } from '../../src/domain/shaping/pace.ts';

describe("a worker's estimate of its clock's lead over the database's", () => {
  it('is the smallest lead seen in the last ten seconds, so one slow answer does not move it', () => {
    const t = 1_000_000;
    // answers arriving 5, 3 and 9 ms after the database's now (a true lead of about 3 ms)
    expect(clockOffsetMs(t, t - 5)).toBe(5);
    expect(clockOffsetMs(t + 100, t + 100 - 3)).toBe(3);
    expect(clockOffsetMs(t + 200, t + 200 - 9)).toBe(3);
    // past ten seconds the old samples are dropped: the estimate follows the clocks
    expect(clockOffsetMs(t + 10_300, t + 10_300 - 4)).toBe(4);
  });
});

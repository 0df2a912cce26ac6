import { describe, expect, it } from 'vitest';
import {
  bucketsOf,
  intervalMs,
  lateAllowanceMs,
  type RateBook,
  writerPace,
} from '../../src/domain/shaping/throttle.ts';

const book = (over: Partial<RateBook> = {}): RateBook => ({
  projects: new Map(),
  campaigns: new Map(),
  domains: new Map(),
  ...over,
});
const row = {
  stream: 'marketing' as const,
  project_id: 'p1',
  campaign_id: 'c1',
  from_address: 'news@Example.com',
};

describe('throttle spacing', () => {
  it('takes the stricter of the per-second and per-hour rates, widened by a small margin', () => {
    expect(intervalMs({ perSecond: null, perHour: null })).toBeNull();
    // 50/s: 20 ms, plus 0.4 ms (2%)
    expect(intervalMs({ perSecond: 50, perHour: null })).toBeCloseTo(20.4, 5);
    // 3,600/h is one a second: stricter than 50/s; the margin is capped at 5 ms
    expect(intervalMs({ perSecond: 50, perHour: 3600 })).toBeCloseTo(1005, 5);
    // the spacing never lets a window hold more than the rate
    for (const perSecond of [1, 7, 50, 333, 1000]) {
      const step = intervalMs({ perSecond, perHour: null }) as number;
      expect(Math.ceil(1000 / step)).toBeLessThanOrEqual(perSecond);
    }
  });
});

describe('a late wake for a slot', () => {
  it('is allowed no more than the margin leaves unused in a second, so no second goes over its rate', () => {
    for (const perSecond of [1, 4, 10, 100, 500, 2000]) {
      const step = intervalMs({ perSecond, perHour: null }) as number;
      const late = lateAllowanceMs(step);
      // the margin the slots of one second leave unused covers the lateness: a late message takes
      // time the second's slots did not use, never one more slot's worth
      const slots = Math.ceil(1000 / step);
      expect(slots * (step - 1000 / perSecond)).toBeGreaterThanOrEqual(late - 1e-9);
      expect(late).toBeGreaterThanOrEqual(5);
      expect(late).toBeLessThanOrEqual(25);
    }
    // from 4/s up a message may wake about 20 ms late; at one a second only 5 ms (its margin)
    expect(lateAllowanceMs(intervalMs({ perSecond: 500, perHour: null }) as number)).toBeCloseTo(19.6, 1);
    expect(lateAllowanceMs(intervalMs({ perSecond: 4, perHour: null }) as number)).toBeCloseTo(19.6, 1);
    expect(lateAllowanceMs(intervalMs({ perSecond: 1, perHour: null }) as number)).toBeCloseTo(5, 5);
  });
});

describe('the buckets a message must respect', () => {
  it('leaves transactional mail and unthrottled projects alone', () => {
    expect(bucketsOf(book(), row)).toEqual([]);
    const limited = book({ projects: new Map([['p1', { perSecond: 10, perHour: null }]]) });
    expect(bucketsOf(limited, { ...row, stream: 'transactional' })).toEqual([]);
  });

  it("uses the project's rate unless the campaign overrides it, and the sending domain's too", () => {
    const rates = book({
      projects: new Map([['p1', { perSecond: 10, perHour: null }]]),
      domains: new Map([['p1:example.com', { perSecond: null, perHour: 36_000 }]]),
    });
    expect(bucketsOf(rates, row).map((b) => b.key)).toEqual(['project:p1', 'domain:p1:example.com']);
    const overridden = book({ ...rates, campaigns: new Map([['c1', { perSecond: 2, perHour: null }]]) });
    const buckets = bucketsOf(overridden, row);
    expect(buckets.map((b) => b.key)).toEqual(['campaign:c1', 'domain:p1:example.com']);
    expect(buckets[0].intervalMs).toBeCloseTo(505, 5);
    // automation mail (no campaign) follows the project's rate
    expect(bucketsOf(rates, { ...row, stream: 'automation', campaign_id: null }).map((b) => b.key)).toEqual([
      'project:p1',
      'domain:p1:example.com',
    ]);
  });
});

describe("a throttled campaign's writer", () => {
  it('writes about five seconds of sending a batch, due a couple of seconds ahead', () => {
    expect(writerPace(null, 500)).toEqual({ batch: 500, aheadMs: 0 });
    expect(writerPace(20, 500)).toEqual({ batch: 250, aheadMs: 3000 });
    expect(writerPace(2, 500)).toEqual({ batch: 500, aheadMs: 0 });
    expect(writerPace(60_000, 500)).toEqual({ batch: 1, aheadMs: 58_000 });
  });
});

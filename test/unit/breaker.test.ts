import { describe, expect, it } from 'vitest';
import { Breaker, judge, ratesOf } from '../../src/domain/shaping/breaker.ts';

const settings = { minMessages: 200, bounceWarn: 2, bounceStop: 5, complaintWarn: 0.1, complaintStop: 0.3 };

describe('what the breaker makes of a tally', () => {
  it('counts bounces of everything handed over and complaints of what was taken', () => {
    expect(ratesOf({ sent: 190, bounced: 10, complained: 1 })).toEqual({
      messages: 200,
      hard_bounce_rate: 5,
      complaint_rate: (100 * 1) / 190,
    });
  });

  it('judges nothing below the minimum number of messages', () => {
    expect(judge({ sent: 150, bounced: 49, complained: 40 }, settings)).toEqual([]);
  });

  it('warns, then stops, each at its threshold, the stop first', () => {
    expect(
      judge({ sent: 1000, bounced: 0, complained: 1 }, settings).map((t) => `${t.level} ${t.metric}`),
    ).toEqual(['warn complaint_rate']);
    const both = judge({ sent: 950, bounced: 50, complained: 2 }, settings);
    expect(both.map((t) => `${t.level} ${t.metric}`)).toEqual([
      'stop hard_bounce_rate',
      'warn complaint_rate',
    ]);
    expect(both[0].reason).toBe('hard bounces reached 5.00 % of 1000 messages (the stop threshold is 5 %)');
  });

  it('never trips on a threshold set to 0', () => {
    expect(
      judge({ sent: 200, bounced: 0, complained: 200 }, { ...settings, complaintWarn: 0, complaintStop: 0 }),
    ).toEqual([]);
  });
});

describe('a breaker watching a campaign', () => {
  it('raises each trip once and stops the campaign at the message that crosses the stop threshold', () => {
    const breaker = new Breaker(settings);
    const taken = { sent: 1, bounced: 0, complained: 0 };
    const complained = { sent: 1, bounced: 0, complained: 1 };
    const seen: string[] = [];
    for (let i = 1; i <= 400; i++) {
      const trips = breaker.observe('campaign', 'c1', 'p1', i % 100 === 0 ? complained : taken);
      for (const t of trips) seen.push(`${i} ${t.level} ${t.metric}`);
      if (breaker.stopped('campaign', 'c1')) break;
    }
    // 2 complaints in 200 is 1 %: past both thresholds at once, the stop alone is raised
    expect(seen).toEqual(['200 stop complaint_rate']);
    expect(breaker.stopped('campaign', 'c1')).toBe(true);
    expect(breaker.stopped('campaign', 'c2')).toBe(false);
    expect(breaker.takeUnwritten()).toEqual([
      { scope: 'campaign', key: 'c1', projectId: 'p1', tally: { sent: 200, bounced: 0, complained: 2 } },
    ]);
    expect(breaker.takeUnwritten()).toEqual([]);
  });
});

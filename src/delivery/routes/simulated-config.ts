import { type Checker, type Obj, rateOf, ratePerHourOf } from './checker.ts';
import { DEFAULT_HEALTH, type HealthSettings } from './health.ts';

/**
 * The feedback simulator (tests and benchmarks): nothing leaves; each recipient is answered here,
 * a set share hard-bounced and a set share complaining (by a hash of the message and recipient,
 * so a retry meets the same answer), the rest delivered, through the same events as real answers.
 */
export interface SimulatedRoute {
  type: 'simulated';
  /** Percentages of recipients. */
  bounceRate: number;
  complaintRate: number;
  ratePerSecond: number | null;
  ratePerHour: number | null;
  health: HealthSettings;
}

/** A `simulated` route of the routes file, checked (its keys and rates). */
export function simulatedRoute(c: Checker, at: string, value: Obj): SimulatedRoute {
  c.known(at, value, ['type', 'bounce_rate', 'complaint_rate', 'rate_per_second', 'rate_per_hour']);
  const percent = (key: string) => {
    const v = value[key];
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 100) {
      c.problem(`${at}.${key}`, 'must be a percentage from 0 to 100');
      return 0;
    }
    return v;
  };
  const route: SimulatedRoute = {
    type: 'simulated',
    bounceRate: percent('bounce_rate'),
    complaintRate: percent('complaint_rate'),
    ratePerSecond: rateOf(c, at, value),
    ratePerHour: ratePerHourOf(c, at, value),
    health: DEFAULT_HEALTH,
  };
  if (route.bounceRate + route.complaintRate > 100)
    c.problem(at, 'bounce_rate and complaint_rate together must be at most 100');
  return route;
}

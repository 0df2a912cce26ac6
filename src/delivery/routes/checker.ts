import { DEFAULT_HEALTH, type HealthSettings } from './health.ts';

/**
 * The routes file's checking tools (config.ts reads the file with them): a Checker collects every
 * problem with its key path, and the readers of the keys several route types share.
 */

export type Obj = Record<string, unknown>;

export function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Collects problems while the file is read, each with its key path. */
export class Checker {
  readonly problems: string[] = [];
  problem(at: string, what: string) {
    this.problems.push(`${at}: ${what}`);
  }
  /** Reports every key of `value` that is not in `known`. */
  known(at: string, value: Obj, known: readonly string[]) {
    for (const key of Object.keys(value))
      if (!known.includes(key))
        this.problem(at ? `${at}.${key}` : key, `unknown key (expected one of ${known.join(', ')})`);
  }
  string(at: string, value: unknown, optional = false): string | undefined {
    if (value === undefined && optional) return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      this.problem(at, value === undefined ? 'is required' : 'must be a non-empty string');
      return undefined;
    }
    return value.trim();
  }
  integer(at: string, value: unknown, fallback: number, min: number, max: number): number {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      this.problem(at, `must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  }
  oneOf<T extends string>(at: string, value: unknown, allowed: readonly T[]): T | undefined {
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    this.problem(at, `must be one of ${allowed.join(', ')}`);
    return undefined;
  }
}

export function rateOf(c: Checker, at: string, value: Obj): number | null {
  const rate = value.rate_per_second;
  if (rate === undefined) return null;
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > 1_000_000) {
    c.problem(`${at}.rate_per_second`, 'must be a number of messages per second above 0');
    return null;
  }
  return rate;
}

export function ratePerHourOf(c: Checker, at: string, value: Obj): number | null {
  const rate = value.rate_per_hour;
  if (rate === undefined) return null;
  if (typeof rate !== 'number' || !Number.isInteger(rate) || rate <= 0 || rate > 1_000_000_000) {
    c.problem(`${at}.rate_per_hour`, 'must be a whole number of messages per hour above 0');
    return null;
  }
  return rate;
}

export function healthOf(c: Checker, at: string, value: Obj): HealthSettings {
  return {
    unhealthyAfter: c.integer(
      `${at}.unhealthy_after`,
      value.unhealthy_after,
      DEFAULT_HEALTH.unhealthyAfter,
      1,
      1000,
    ),
    probeSeconds: c.integer(`${at}.probe_seconds`, value.probe_seconds, DEFAULT_HEALTH.probeSeconds, 1, 3600),
  };
}

export function configurationSetOf(c: Checker, at: string, value: Obj): string | undefined {
  const name = c.string(`${at}.configuration_set`, value.configuration_set, true);
  if (name !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(name))
    c.problem(`${at}.configuration_set`, 'must be an SES configuration set name (letters, digits, "_", "-")');
  return name;
}

/**
 * A direct route in the routes file (issue 32): its source addresses with their EHLO names, its
 * per-site limits, the port of the servers it reaches. Read with config.ts's Checker.
 */

import { isIP } from 'node:net';
import { type Network, parseNetwork } from '../address-class.ts';
import { type Checker, healthOf, isObject, type Obj, rateOf, ratePerHourOf } from './checker.ts';
import type { HealthSettings } from './health.ts';

/** One of the operator's addresses a direct route connects from, and the name it gives in EHLO. */
export interface SourceAddress {
  address: string;
  ehlo: string;
  /**
   * Its warm-up plan (issue 33): from `startedOn` (`YYYY-MM-DD`), at most each day's volume of
   * marketing and automation messages leaves from it (`schedule`, null: the default schedule);
   * transactional mail is never held but counts.
   */
  warmup?: { startedOn: string; schedule: number[] | null };
}

/** A site's limits as the routes file overrides them (direct/sites.ts holds the defaults). */
export interface SiteOverride {
  maxConnections?: number;
  messagesPerConnection?: number;
  messagesPerHour?: number;
  /** Seconds before each retry of a message the site deferred (the last repeats). */
  retrySchedule?: number[];
}

/**
 * How long each step of a transaction may wait for the server, in seconds (RFC 5321 §4.5.3.2's
 * minimums): MAIL FROM 5 min, each RCPT TO 5 min, DATA 2 min, sending the data 3 min, the answer
 * to the final dot 10 min. A deadline, not an idle timeout: a byte every second does not extend it.
 */
export interface PhaseTimeouts {
  mail: number;
  rcpt: number;
  data: number;
  dataBlock: number;
  dataDone: number;
}

export const RFC_PHASE_TIMEOUTS: PhaseTimeouts = {
  mail: 300,
  rcpt: 300,
  data: 120,
  dataBlock: 180,
  dataDone: 600,
};

function phaseTimeoutsOf(c: Checker, at: string, value: unknown): PhaseTimeouts {
  if (value === undefined) return RFC_PHASE_TIMEOUTS;
  if (!isObject(value)) {
    c.problem(at, 'must be an object of seconds {mail, rcpt, data, data_block, data_done}');
    return RFC_PHASE_TIMEOUTS;
  }
  c.known(at, value, ['mail', 'rcpt', 'data', 'data_block', 'data_done']);
  const d = RFC_PHASE_TIMEOUTS;
  return {
    mail: c.integer(`${at}.mail`, value.mail, d.mail, 1, 3600),
    rcpt: c.integer(`${at}.rcpt`, value.rcpt, d.rcpt, 1, 3600),
    data: c.integer(`${at}.data`, value.data, d.data, 1, 3600),
    dataBlock: c.integer(`${at}.data_block`, value.data_block, d.dataBlock, 1, 3600),
    dataDone: c.integer(`${at}.data_done`, value.data_done, d.dataDone, 1, 3600),
  };
}

/** Straight to each recipient's MX (issue 32). */
export interface DirectRoute {
  type: 'direct';
  /** The addresses connections are bound to, each with its EHLO name; empty: the system's choice. */
  sourceAddresses: SourceAddress[];
  /** Limits per site, keyed by any one of the site's MX host names (lower case). */
  sites: Map<string, SiteOverride>;
  /** The port mail servers listen on: 25, except on a simulated internet. */
  port: number;
  /** Seconds a mail server may stay silent before the attempt is deferred (RFC 5321 §4.5.3.2: 5 min). */
  timeoutSeconds: number;
  /**
   * Seconds one transaction may take in all, MAIL FROM to the answer to the data, however the
   * server trickles its answers (the RFC's longest single wait, for the final dot, is 10 min).
   */
  transactionTimeoutSeconds: number;
  /** Seconds each step of a transaction may wait for its answer (RFC 5321 §4.5.3.2), however the server trickles it. */
  phaseTimeouts: PhaseTimeouts;
  /**
   * Networks beyond the public internet its MX hosts may be reached in (loopback, private,
   * link-local, reserved; `allow_networks`): none by default (direct/address-guard.ts).
   */
  allowNetworks: Network[];
  ratePerSecond: number | null;
  ratePerHour: number | null;
  health: HealthSettings;
}

const HOST_NAME =
  /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function sourceAddressesOf(c: Checker, at: string, value: unknown): SourceAddress[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    c.problem(at, 'must be a list of {"address", "ehlo"}');
    return [];
  }
  return value.flatMap((entry, i): SourceAddress[] => {
    const where = `${at}[${i}]`;
    if (!isObject(entry)) {
      c.problem(where, 'must be an object like {"address": "203.0.113.10", "ehlo": "mta1.example.com"}');
      return [];
    }
    c.known(where, entry, ['address', 'ehlo', 'warmup']);
    const address = c.string(`${where}.address`, entry.address);
    if (address !== undefined && isIP(address) === 0)
      c.problem(`${where}.address`, 'must be an IPv4 or IPv6 address of this machine');
    const ehlo = c.string(`${where}.ehlo`, entry.ehlo)?.toLowerCase();
    if (ehlo !== undefined && !HOST_NAME.test(ehlo))
      c.problem(`${where}.ehlo`, 'must be a fully qualified host name, like mta1.example.com');
    const warmup = entry.warmup === undefined ? undefined : warmupOf(c, `${where}.warmup`, entry.warmup);
    return address && ehlo ? [{ address, ehlo, ...(warmup ? { warmup } : {}) }] : [];
  });
}

function warmupOf(c: Checker, at: string, value: unknown): SourceAddress['warmup'] {
  if (!isObject(value)) {
    c.problem(at, 'must be an object like {"start_date": "2026-12-01", "schedule": [50, 100]}');
    return undefined;
  }
  c.known(at, value, ['start_date', 'schedule']);
  const start = c.string(`${at}.start_date`, value.start_date);
  // read back as written: JavaScript takes 2026-02-30 for March 2nd
  const day = start !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(start) ? new Date(start) : null;
  if (
    start !== undefined &&
    (!day || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== start)
  )
    c.problem(`${at}.start_date`, 'must be a day of the calendar as YYYY-MM-DD');
  let schedule: number[] | null = null;
  if (value.schedule !== undefined) {
    const list = value.schedule;
    if (
      !Array.isArray(list) ||
      list.length === 0 ||
      list.length > 365 ||
      !list.every((v) => Number.isInteger(v) && v >= 1 && v <= 100_000_000)
    )
      c.problem(`${at}.schedule`, 'must be a list of 1 to 365 whole numbers of messages per day');
    else schedule = list as number[];
  }
  return start ? { startedOn: start, schedule } : undefined;
}

function networksOf(c: Checker, at: string, value: unknown): Network[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > 1000) {
    c.problem(at, 'must be a list of networks, like ["10.0.0.0/8", "fd00::/8"]');
    return [];
  }
  return value.flatMap((entry, i): Network[] => {
    if (typeof entry !== 'string') {
      c.problem(`${at}[${i}]`, 'must be a network as a string, like "10.0.0.0/8"');
      return [];
    }
    const network = parseNetwork(entry);
    if ('error' in network) {
      c.problem(`${at}[${i}]`, network.error);
      return [];
    }
    return [network];
  });
}

function sitesOf(c: Checker, at: string, value: unknown): Map<string, SiteOverride> {
  const sites = new Map<string, SiteOverride>();
  if (value === undefined) return sites;
  if (!isObject(value)) {
    c.problem(at, 'must be an object of MX host name to limits');
    return sites;
  }
  for (const [host, limits] of Object.entries(value)) {
    const where = `${at}.${host}`;
    const name = host.toLowerCase().replace(/\.$/, '');
    if (!HOST_NAME.test(name)) c.problem(where, "must be named by one of the site's MX host names");
    if (!isObject(limits)) {
      c.problem(where, 'must be an object of limits');
      continue;
    }
    c.known(where, limits, [
      'max_connections',
      'messages_per_connection',
      'messages_per_hour',
      'retry_schedule',
    ]);
    const schedule = limits.retry_schedule;
    if (schedule !== undefined) {
      if (
        !Array.isArray(schedule) ||
        schedule.length === 0 ||
        !schedule.every((n) => Number.isInteger(n) && n >= 1 && n <= 86_400)
      )
        c.problem(
          `${where}.retry_schedule`,
          'must be a list of whole seconds from 1 to 86400, like [300, 900, 3600]',
        );
    }
    const override: SiteOverride = {};
    if (limits.max_connections !== undefined)
      override.maxConnections = c.integer(`${where}.max_connections`, limits.max_connections, 1, 1, 1000);
    if (limits.messages_per_connection !== undefined)
      override.messagesPerConnection = c.integer(
        `${where}.messages_per_connection`,
        limits.messages_per_connection,
        1,
        1,
        100_000,
      );
    if (limits.messages_per_hour !== undefined)
      override.messagesPerHour = c.integer(
        `${where}.messages_per_hour`,
        limits.messages_per_hour,
        1,
        1,
        100_000_000,
      );
    if (Array.isArray(schedule) && schedule.every((n) => Number.isInteger(n) && n >= 1 && n <= 86_400))
      override.retrySchedule = schedule as number[];
    sites.set(name, override);
  }
  return sites;
}

/** A direct route: its source addresses and per-site limits, and the port of the servers it reaches. */
export function directRoute(c: Checker, at: string, value: Obj): DirectRoute {
  c.known(at, value, [
    'type',
    'source_addresses',
    'sites',
    'port',
    'timeout_seconds',
    'transaction_timeout_seconds',
    'phase_timeouts',
    'rate_per_second',
    'rate_per_hour',
    'unhealthy_after',
    'probe_seconds',
    'allow_networks',
  ]);
  return {
    type: 'direct',
    sourceAddresses: sourceAddressesOf(c, `${at}.source_addresses`, value.source_addresses),
    sites: sitesOf(c, `${at}.sites`, value.sites),
    port: c.integer(`${at}.port`, value.port, 25, 1, 65_535),
    timeoutSeconds: c.integer(`${at}.timeout_seconds`, value.timeout_seconds, 300, 1, 3600),
    transactionTimeoutSeconds: c.integer(
      `${at}.transaction_timeout_seconds`,
      value.transaction_timeout_seconds,
      600,
      1,
      3600,
    ),
    phaseTimeouts: phaseTimeoutsOf(c, `${at}.phase_timeouts`, value.phase_timeouts),
    allowNetworks: networksOf(c, `${at}.allow_networks`, value.allow_networks),
    ratePerSecond: rateOf(c, at, value),
    ratePerHour: ratePerHourOf(c, at, value),
    health: healthOf(c, at, value),
  };
}

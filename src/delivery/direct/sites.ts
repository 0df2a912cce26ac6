import type { SiteOverride } from '../routes/config.ts';

/**
 * Sites: the mail servers a direct route delivers to, grouped as the providers run them. Every
 * recipient domain whose MX hosts belong to one provider (all of Google's, whatever the domain)
 * is one site, with one set of limits; any other domain's site is the set of its MX hosts, so two
 * domains hosted on the same servers share one. Limits are built in for the large providers and
 * overridden by the route's `sites`, keyed by any one of a site's MX host names.
 */

export interface SiteLimits {
  /** Connections open at once to the site, per source address. */
  maxConnections: number;
  /** Messages one connection carries before it is closed. */
  messagesPerConnection: number;
  /** Messages per hour to the site, per source address (null: no limit). */
  messagesPerHour: number | null;
  /** Seconds before each retry of a message the site deferred (null: POSTHORN_RETRY_SCHEDULE). */
  retrySchedule?: number[] | null;
}

export interface Site {
  /** What the site is known as: a provider's name, or its MX hosts joined by commas. */
  key: string;
  limits: SiteLimits;
}

/** What the rest of the internet gets: a few connections, reused for up to 100 messages each. */
export const DEFAULT_LIMITS: SiteLimits = {
  maxConnections: 5,
  messagesPerConnection: 100,
  messagesPerHour: null,
};

/**
 * The large providers, known by their MX host names, with the limits they are known to take from
 * a sender of good standing (their postmaster pages name no figures; these are the ones Postfix
 * and KumoMTA operators start from). A route's `sites` entry overrides any of them.
 */
export const PROVIDERS: readonly { name: string; hosts: RegExp; limits: SiteLimits }[] = [
  {
    name: 'google',
    hosts: /(^|\.)(google\.com|googlemail\.com)$/,
    limits: { maxConnections: 10, messagesPerConnection: 100, messagesPerHour: null },
  },
  {
    name: 'microsoft',
    hosts: /(^|\.)(protection\.outlook\.com|hotmail\.com|outlook\.com)$/,
    limits: { maxConnections: 5, messagesPerConnection: 50, messagesPerHour: null },
  },
  {
    name: 'yahoo',
    hosts: /(^|\.)(yahoodns\.net|yahoo\.com|aol\.com)$/,
    limits: { maxConnections: 5, messagesPerConnection: 20, messagesPerHour: null },
  },
  {
    name: 'apple',
    hosts: /(^|\.)(icloud\.com|me\.com|apple\.com)$/,
    limits: { maxConnections: 5, messagesPerConnection: 50, messagesPerHour: null },
  },
];

function merged(limits: SiteLimits, override: SiteOverride | undefined): SiteLimits {
  if (!override) return limits;
  return {
    maxConnections: override.maxConnections ?? limits.maxConnections,
    messagesPerConnection: override.messagesPerConnection ?? limits.messagesPerConnection,
    messagesPerHour: override.messagesPerHour ?? limits.messagesPerHour,
    retrySchedule: override.retrySchedule ?? limits.retrySchedule ?? null,
  };
}

/**
 * The site a domain's MX hosts belong to, and its limits: a provider's when one of the hosts is
 * theirs, else the hosts themselves; a route's `sites` entry naming any of the hosts overrides
 * the limits (and, for hosts of no provider, names the site).
 */
export function siteOf(hosts: readonly string[], overrides: ReadonlyMap<string, SiteOverride>): Site {
  const named = hosts.find((h) => overrides.has(h));
  const provider = PROVIDERS.find((p) => hosts.some((h) => p.hosts.test(h)));
  const override = named === undefined ? undefined : overrides.get(named);
  if (provider) {
    // an override names a provider's site by any of its hosts, even one this domain does not use
    const providerOverride = override ?? [...overrides].find(([host]) => provider.hosts.test(host))?.[1];
    return { key: provider.name, limits: merged(provider.limits, providerOverride) };
  }
  if (named !== undefined) return { key: named, limits: merged(DEFAULT_LIMITS, override) };
  return { key: [...hosts].sort().join(','), limits: DEFAULT_LIMITS };
}

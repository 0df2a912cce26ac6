import { isIP } from 'node:net';

/** A setting Posthorn cannot start with: its message names the variable and what it takes. */
export class ConfigError extends Error {}

/** Whose X-Forwarded-For to believe (see Config.trustProxy). */
export type TrustProxy = false | number | string[];

type Env = Record<string, string | undefined>;

// proxy-addr's names for the usual ranges: 127.0.0.0/8 and ::1, fe80::/10 and 169.254.0.0/16, private
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function proxyEntryOk(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry) || isIP(entry)) return true;
  const [address, bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length > 0 || !/^\d{1,3}$/.test(bits ?? '')) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/**
 * POSTHORN_TRUST_PROXY: off (unset, 0, false) so that a client cannot choose the address its
 * sign-in attempts count against; a hop count (the proxies in front, each adding one address); or
 * a comma-separated list of proxy addresses and CIDRs (or loopback, linklocal, uniquelocal).
 */
export function trustProxy(env: Env, name: string): TrustProxy {
  const raw = (env[name] ?? '').trim();
  if (raw === '' || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 20) throw new ConfigError(`${name} as a hop count must be between 0 and 20, got ${hops}`);
    return hops;
  }
  const entries = raw.split(',').map((entry) => entry.trim().toLowerCase());
  const bad = entries.find((entry) => !proxyEntryOk(entry));
  if (bad !== undefined)
    throw new ConfigError(
      `${name} must be off (unset or 0), a hop count such as 1, or comma-separated proxy addresses or CIDRs such as 10.0.0.5,10.1.0.0/16; "${bad}" is none of these`,
    );
  return entries;
}

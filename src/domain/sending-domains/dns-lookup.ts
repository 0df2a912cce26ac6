import { Resolver } from 'node:dns/promises';

/** A DNS answer we could not get (SERVFAIL, timeout, refused): nothing may be concluded from it. */
export class DnsUnavailableError extends Error {
  readonly code: string;
  constructor(name: string, code: string) {
    super(`DNS lookup of ${name} failed (${code}); nothing was changed, try the check again`);
    this.code = code;
  }
}

export interface DnsLookup {
  /** TXT records, each joined from its strings; [] when the name or record does not exist. */
  txt(name: string): Promise<{ joined: string; strings: string[] }[]>;
  mx(name: string): Promise<{ exchange: string; priority: number }[]>;
  cname(name: string): Promise<string[]>;
}

const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'NODATA']);

/** Queries the resolvers in POSTHORN_DNS_SERVERS (`host` or `host:port`), or the system's. */
export function createDnsLookup(servers: string[], timeoutMs = 2000): DnsLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  const guard = async <T>(name: string, lookup: () => Promise<T[]>): Promise<T[]> => {
    try {
      return await lookup();
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'EUNKNOWN';
      if (ABSENT.has(code)) return [];
      throw new DnsUnavailableError(name, code);
    }
  };
  return {
    txt: async (name) =>
      (await guard(name, () => resolver.resolveTxt(name))).map((strings) => ({
        joined: strings.join(''),
        strings,
      })),
    mx: (name) => guard(name, () => resolver.resolveMx(name)),
    cname: (name) => guard(name, () => resolver.resolveCname(name)),
  };
}

/**
 * A `dns.promises.resolve`-shaped function on the same resolvers, for libraries that take one
 * (mailauth's SPF, DKIM, DMARC and ARC checks).
 */
export function createDnsResolve(servers: string[], timeoutMs = 2000) {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  return (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>;
}

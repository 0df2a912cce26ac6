import { randomInt } from 'node:crypto';
import { getServers } from 'node:dns';
import { isIP } from 'node:net';
import dns2 from 'dns2';

/**
 * Finding the way to a recipient's domain (RFC 5321 §5.1), for a direct route: the domain's MX
 * records by preference (equal preferences shuffled), each host's IPv4 and IPv6 addresses; the
 * domain's own addresses as an implicit MX when it has no MX; a null MX (RFC 7505) or a domain
 * that does not exist is a permanent answer, given at once with no connection made. Answers are
 * cached for their TTL (negative answers for the zone's SOA minimum, RFC 2308). Queries go to
 * POSTHORN_DNS_SERVERS (`host` or `host:port`), else to the system's resolvers.
 */

/** One mail server of a domain, in the order to try it. */
export interface MxHost {
  /** The MX host name, lower case, no trailing dot (the domain itself for an implicit MX). */
  host: string;
  preference: number;
  /** Its addresses, IPv4 then IPv6. */
  addresses: { address: string; family: 4 | 6 }[];
}

export type Way =
  /** The hosts to try, in order; `implicit` when the domain has no MX and its own address serves. */
  | { kind: 'hosts'; hosts: MxHost[]; implicit: boolean }
  /**
   * Permanent: the domain says it takes no mail (null MX), it does not exist, or none of its MX
   * hosts does (`code`: the reply code and enhanced status to bounce with, when not the default).
   */
  | { kind: 'refused'; reason: string; code?: string };

/** A lookup that failed for now (a timeout, SERVFAIL, no address for any MX host): try again later. */
export class DnsTemporaryError extends Error {
  override name = 'DnsTemporaryError';
}

const { Packet, UDPClient } = dns2 as unknown as {
  Packet: { TYPE: Record<string, number>; RCODE: Record<string, number> };
  UDPClient: (opts: { dns: string; port: number; timeout: number }) => Query;
};
type Query = (name: string, type: string) => Promise<Answer>;
interface Answer {
  header: { rcode: number };
  answers: {
    type: number;
    ttl: number;
    exchange?: string;
    priority?: number;
    address?: string;
    data?: string[] | string;
    domain?: string;
  }[];
  authorities: { type: number; ttl: number; minimum?: number }[];
}

type RecordType = 'MX' | 'A' | 'AAAA' | 'TXT' | 'PTR';

/** What one question found: records of its type (values and the shortest TTL), none, or no domain. */
type Lookup<T> = { kind: 'records'; values: T[] } | { kind: 'nodata' } | { kind: 'nxdomain' };

const TIMEOUT_MS = 5_000;
/** Negative answers without an SOA, and the bounds of any TTL kept. */
const NEGATIVE_TTL_S = 60;
const MAX_TTL_S = 86_400;
/** How many entries the cache keeps before it drops the oldest. */
const CACHE_SIZE = 50_000;

/** `host` or `host:port` (IPv6 as `[addr]:port` or a bare address) into a resolver to ask. */
export function parseDnsServer(server: string): { address: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(server);
  if (bracketed) return { address: bracketed[1], port: Number(bracketed[2] ?? 53) };
  if (isIP(server) === 6) return { address: server, port: 53 };
  const [address, port] = server.split(':');
  return { address, port: Number(port ?? 53) };
}

/** The name an address's PTR record is found at: `4.3.2.1.in-addr.arpa`, or nibbles under `ip6.arpa`. */
export function reverseName(address: string): string {
  if (isIP(address) === 4) return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
  // expand "::" to the zero groups it stands for, then one label per hex digit, last first
  const [head, tail = ''] = address.toLowerCase().split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const full = [...groups(head), ...Array(address.includes('::') ? missing : 0).fill('0'), ...groups(tail)];
  return `${full
    .map((g) => g.padStart(4, '0'))
    .join('')
    .split('')
    .reverse()
    .join('.')}.ip6.arpa`;
}

export interface MxResolverOptions {
  /** POSTHORN_DNS_SERVERS; empty: the system's resolvers. */
  servers: string[];
  /** The clock, in ms (tests move it). */
  now?: () => number;
  /** A random integer below `n` (tests fix the shuffle). */
  random?: (n: number) => number;
}

export class MxResolver {
  private readonly queries: Query[];
  private readonly now: () => number;
  private readonly random: (n: number) => number;
  private readonly cache = new Map<string, { expires: number; lookup: Lookup<unknown> }>();
  private readonly inFlight = new Map<string, Promise<Lookup<unknown>>>();

  constructor(options: MxResolverOptions) {
    const servers = options.servers.length > 0 ? options.servers : getServers();
    this.queries = servers.map((s) => {
      const { address, port } = parseDnsServer(s);
      return UDPClient({ dns: address, port, timeout: TIMEOUT_MS });
    });
    this.now = options.now ?? Date.now;
    this.random = options.random ?? randomInt;
  }

  /** The way to `domain`'s mail servers, or a permanent refusal; throws DnsTemporaryError for now. */
  async resolve(domain: string): Promise<Way> {
    const name = domain.toLowerCase().replace(/\.$/, '');
    const mx = await this.lookup<{ host: string; preference: number }>(name, 'MX');
    if (mx.kind === 'nxdomain')
      return { kind: 'refused', reason: `the domain ${name} does not exist (NXDOMAIN)` };
    if (mx.kind === 'records' && mx.values.length > 0) {
      // RFC 7505: a single MX of "." means the domain accepts no mail
      if (mx.values.some((r) => r.host === '')) {
        return { kind: 'refused', reason: `the domain ${name} accepts no mail (null MX, RFC 7505)` };
      }
      const hosts = await Promise.all(
        this.ordered(mx.values).map(async (r) => ({ ...r, addresses: await this.addressesOf(r.host) })),
      );
      const reachable = hosts.filter((h) => h.addresses.length > 0);
      // every MX host name does not exist: no server will ever take this domain's mail (RFC 5321
      // §5.1 leaves it to the client; Postfix bounces it), unlike a lookup that failed for now
      if (reachable.length === 0 && (await this.allNonexistent(hosts.map((h) => h.host)))) {
        return {
          kind: 'refused',
          reason: `no MX host of ${name} exists (NXDOMAIN: ${hosts.map((h) => h.host).join(', ')})`,
          code: '550 5.4.4',
        };
      }
      if (reachable.length === 0) {
        throw new DnsTemporaryError(
          `no MX host of ${name} has an address (${hosts.map((h) => h.host).join(', ')})`,
        );
      }
      return { kind: 'hosts', hosts: reachable, implicit: false };
    }
    // no MX: the domain's own address records are its implicit MX, preference 0 (RFC 5321 §5.1)
    const addresses = await this.addressesOf(name);
    if (addresses.length === 0) {
      return { kind: 'refused', reason: `the domain ${name} has no MX and no address record` };
    }
    return { kind: 'hosts', hosts: [{ host: name, preference: 0, addresses }], implicit: true };
  }

  /** The TXT records of `name`, each one's strings joined; none when it has none (or does not exist). */
  async txt(name: string): Promise<string[]> {
    const found = await this.lookup<string>(name.toLowerCase().replace(/\.$/, ''), 'TXT');
    return found.kind === 'records' ? found.values : [];
  }

  /** The names an address's reverse DNS (PTR) gives. */
  async ptr(address: string): Promise<string[]> {
    const found = await this.lookup<string>(reverseName(address), 'PTR');
    return found.kind === 'records' ? found.values : [];
  }

  /** A host's addresses, IPv4 then IPv6 (for the MTA-STS policy host). */
  addresses(host: string): Promise<MxHost['addresses']> {
    return this.addressesOf(host.toLowerCase().replace(/\.$/, ''));
  }

  /** By preference, lowest first; hosts of equal preference in a random order (RFC 5321 §5.1). */
  private ordered(records: { host: string; preference: number }[]) {
    const shuffled = [...records];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = this.random(i + 1);
      [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
    }
    return shuffled.sort((a, b) => a.preference - b.preference); // stable: the shuffle stays within a preference
  }

  /** Whether every one of these names is answered NXDOMAIN (from the cache the lookups just filled). */
  private async allNonexistent(hosts: string[]): Promise<boolean> {
    const answers = await Promise.all(hosts.map((h) => (isIP(h) ? null : this.lookup<string>(h, 'A'))));
    return answers.every((a) => a?.kind === 'nxdomain');
  }

  private async addressesOf(host: string): Promise<MxHost['addresses']> {
    if (isIP(host)) return []; // an MX naming an address literal is not valid (RFC 5321 §5.1)
    const [v4, v6] = await Promise.all([this.lookup<string>(host, 'A'), this.lookup<string>(host, 'AAAA')]);
    return [
      ...(v4.kind === 'records' ? v4.values.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.kind === 'records' ? v6.values.map((address) => ({ address, family: 6 as const })) : []),
    ];
  }

  /** One question, from the cache while its TTL lasts; concurrent askers share one query. */
  private async lookup<T>(name: string, type: RecordType): Promise<Lookup<T>> {
    const key = `${type} ${name}`;
    const cached = this.cache.get(key);
    if (cached && cached.expires > this.now()) return cached.lookup as Lookup<T>;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.ask(name, type).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return (await pending) as Lookup<T>;
  }

  private async ask(name: string, type: RecordType): Promise<Lookup<unknown>> {
    const answer = await this.firstAnswer(name, type);
    const code = Packet.TYPE[type];
    let lookup: Lookup<unknown>;
    let ttl: number;
    const soa = answer.authorities.find((r) => r.type === Packet.TYPE.SOA);
    const negativeTtl = soa ? Math.min(soa.ttl, soa.minimum ?? soa.ttl) : NEGATIVE_TTL_S;
    if (answer.header.rcode === Packet.RCODE.NXDOMAIN) {
      lookup = { kind: 'nxdomain' };
      ttl = negativeTtl;
    } else {
      const records = answer.answers.filter((r) => r.type === code);
      if (records.length === 0) {
        lookup = { kind: 'nodata' };
        ttl = negativeTtl;
      } else {
        ttl = Math.min(...records.map((r) => r.ttl));
        lookup = {
          kind: 'records',
          values: records.map((r) =>
            type === 'MX'
              ? { host: (r.exchange ?? '').toLowerCase().replace(/\.$/, ''), preference: r.priority ?? 0 }
              : type === 'TXT'
                ? [r.data ?? ''].flat().join('')
                : type === 'PTR'
                  ? (r.domain ?? '').toLowerCase().replace(/\.$/, '')
                  : r.address,
          ),
        };
      }
    }
    this.remember(`${type} ${name}`, lookup, ttl);
    return lookup;
  }

  /** The first usable answer of the resolvers; a failure of every one is temporary. */
  private async firstAnswer(name: string, type: string): Promise<Answer> {
    const errors: string[] = [];
    for (const query of this.queries) {
      try {
        const answer = await query(name, type);
        const { rcode } = answer.header;
        if (rcode === Packet.RCODE.NOERROR || rcode === Packet.RCODE.NXDOMAIN) return answer;
        errors.push(`rcode ${rcode}`);
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    throw new DnsTemporaryError(`DNS ${type} of ${name} failed: ${errors.join('; ') || 'no resolver'}`);
  }

  private remember(key: string, lookup: Lookup<unknown>, ttlSeconds: number) {
    const ttl = Math.max(0, Math.min(MAX_TTL_S, ttlSeconds));
    if (ttl === 0) return;
    if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, { expires: this.now() + ttl * 1000, lookup });
  }
}

import https from 'node:https';
import { type AddressGuard, describeRefused } from './address-guard.ts';
import type { MxHost } from './mx.ts';

/**
 * MTA-STS (RFC 8461) for a direct route: a domain that publishes `_mta-sts.<domain>` TXT
 * `v=STSv1; id=…` serves its policy at `https://mta-sts.<domain>/.well-known/mta-sts.txt`
 * (a valid certificate, no redirects). `enforce`: mail goes only to MX hosts the policy names,
 * over TLS with a certificate valid for the host, else it waits (deferred); `testing`: delivered
 * as usual, the attempt records the policy; `none` or no policy: as usual. A policy is kept for
 * its `max_age` and fetched again when the TXT id changes; when a fetch fails, the cached policy
 * stands, and without one the domain is treated as having none (§5). A fetch has a deadline for
 * the whole answer (FETCH_DEADLINE_MS: a host that sends a byte now and then is cut off too), one
 * domain has at most one fetch in flight (every message to it waits for that one), and a failed
 * fetch is not tried again for FAILED_FETCH_MS (the messages meanwhile go as without a policy).
 * The policy host's addresses pass the route's address guard (address-guard.ts, the classes
 * webhooks are judged by) and the connection goes to the addresses checked: a host on 127.0.0.1
 * or a metadata address is never asked, and its domain is taken as having no policy.
 */

export interface StsPolicy {
  mode: 'enforce' | 'testing' | 'none';
  /** MX patterns: a host name, or `*.` and a domain (one label). */
  mx: string[];
  /** Seconds the policy may be cached. */
  maxAge: number;
}

/** Reads a policy file (§3.2); a reason when it is not one. */
export function parsePolicy(text: string): StsPolicy | { error: string } {
  const fields = new Map<string, string[]>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at === -1) continue;
    const key = line.slice(0, at).trim().toLowerCase();
    const value = line.slice(at + 1).trim();
    fields.set(key, [...(fields.get(key) ?? []), value]);
  }
  if (fields.get('version')?.[0] !== 'STSv1') return { error: 'version is not STSv1' };
  const mode = fields.get('mode')?.[0];
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') return { error: `unknown mode ${mode}` };
  const maxAge = Number(fields.get('max_age')?.[0]);
  if (!Number.isInteger(maxAge) || maxAge < 0 || maxAge > 31_557_600)
    return { error: 'max_age is missing or out of range' };
  const mx = (fields.get('mx') ?? []).map((m) => m.toLowerCase().replace(/\.$/, ''));
  if (mode !== 'none' && mx.length === 0) return { error: 'no mx pattern' };
  return { mode, mx, maxAge };
}

/** Whether an MX host name fits a policy's pattern: exactly, or `*.domain` for one more label (§4.1). */
export function mxMatches(pattern: string, host: string): boolean {
  if (!pattern.startsWith('*.')) return pattern === host;
  const rest = pattern.slice(1);
  return host.endsWith(rest) && !host.slice(0, -rest.length).includes('.') && host.length > rest.length;
}

/** What MTA-STS needs of DNS: TXT records and a host's addresses. */
export interface StsDns {
  txt(name: string): Promise<string[]>;
  addresses(host: string): Promise<MxHost['addresses']>;
}

export interface MtaStsOptions {
  dns: StsDns;
  /** Which addresses a policy host may be reached at: the direct route's guard. */
  guard: AddressGuard;
  /** The HTTPS port of policy hosts: 443, except on a test network. */
  port?: number;
  /** Certificates to trust instead of the system's (a test network's CA). */
  ca?: string[];
  now?: () => number;
}

/** The most a policy fetch may take, connection to last byte. */
const FETCH_DEADLINE_MS = 10_000;
/** How long a domain whose policy fetch failed is taken as having none before it is fetched again. */
const FAILED_FETCH_MS = 5 * 60_000;
const MAX_POLICY_BYTES = 64 * 1024;

export class MtaSts {
  private readonly cache = new Map<string, { id: string; policy: StsPolicy; expires: number }>();
  /** Fetches in flight, by domain and record id: every message to the domain waits for the one. */
  private readonly fetching = new Map<string, Promise<StsPolicy>>();
  /** Until when a domain's failed fetch (for its record id) is not tried again. */
  private readonly failed = new Map<string, { id: string; until: number }>();
  private readonly options: MtaStsOptions;
  private readonly now: () => number;

  constructor(options: MtaStsOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** The domain's policy now, or null when it has none (or none could be had). */
  async policyOf(domain: string): Promise<StsPolicy | null> {
    const cached = this.cache.get(domain);
    const live = cached && cached.expires > this.now() ? cached : undefined;
    let id: string | undefined;
    try {
      const record = (await this.options.dns.txt(`_mta-sts.${domain}`)).filter((t) =>
        /^v=STSv1\s*;/i.test(t),
      );
      id =
        record.length === 1 ? /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(?:;|$)/.exec(record[0])?.[1] : undefined;
    } catch {
      return live?.policy ?? null;
    }
    // no record: a cached policy stands until it expires (§5.1)
    if (id === undefined) return live?.policy ?? null;
    if (live && live.id === id) return live.policy;
    const failure = this.failed.get(domain);
    if (failure && failure.id === id && failure.until > this.now()) return live?.policy ?? null;
    try {
      return await this.fetchOnce(domain, id);
    } catch {
      return live?.policy ?? null;
    }
  }

  /** The domain's policy for record `id`: the fetch in flight, or a new one. */
  private fetchOnce(domain: string, id: string): Promise<StsPolicy> {
    const key = `${domain} ${id}`;
    let pending = this.fetching.get(key);
    if (!pending) {
      pending = this.fetch(domain)
        .then(
          (policy) => {
            this.cache.set(domain, { id, policy, expires: this.now() + policy.maxAge * 1000 });
            this.failed.delete(domain);
            return policy;
          },
          (err: unknown) => {
            this.failed.set(domain, { id, until: this.now() + FAILED_FETCH_MS });
            throw err;
          },
        )
        .finally(() => this.fetching.delete(key));
      this.fetching.set(key, pending);
    }
    return pending;
  }

  private async fetch(domain: string): Promise<StsPolicy> {
    const host = `mta-sts.${domain}`;
    const addresses = await this.options.dns.addresses(host);
    if (addresses.length === 0) throw new Error(`${host} has no address`);
    for (const { address } of addresses) {
      const refused = this.options.guard.refusal(address);
      if (refused !== null)
        throw new Error(
          `${host} resolves to ${address}, ${describeRefused(refused)}: its policy is not fetched`,
        );
    }
    const text = await new Promise<string>((resolve, reject) => {
      const request = https.get(
        {
          host,
          servername: host,
          port: this.options.port ?? 443,
          path: '/.well-known/mta-sts.txt',
          // the addresses our resolvers gave and the guard passed, as webhooks pin theirs (the
          // system's resolver may not know the host, and a second lookup could answer another)
          lookup: (_name, opts, callback) => {
            const answer = callback as (e: null, a: unknown, f?: number) => void;
            if ((opts as { all?: boolean }).all) answer(null, addresses);
            else answer(null, addresses[0].address, addresses[0].family);
          },
          ...(this.options.ca ? { ca: this.options.ca } : {}),
          timeout: FETCH_DEADLINE_MS,
        },
        (response) => {
          const type = String(response.headers['content-type'] ?? '');
          if (response.statusCode !== 200 || !/^text\/plain\b/i.test(type)) {
            response.resume();
            reject(new Error(`policy answered ${response.statusCode} ${type}`));
            return;
          }
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            body += chunk;
            if (body.length > MAX_POLICY_BYTES) request.destroy(new Error('policy too large'));
          });
          response.on('end', () => resolve(body));
          response.on('error', reject);
        },
      );
      request.on('timeout', () => request.destroy(new Error('policy fetch timed out')));
      request.on('error', reject);
      // the idle timeout above restarts with every byte: this one ends the whole fetch
      const deadline = setTimeout(() => {
        const err = new Error(`policy fetch took longer than ${FETCH_DEADLINE_MS / 1000} s`);
        reject(err);
        request.destroy(err);
      }, FETCH_DEADLINE_MS);
      deadline.unref();
      request.on('close', () => clearTimeout(deadline));
    });
    const policy = parsePolicy(text);
    if ('error' in policy) throw new Error(policy.error);
    return policy;
  }
}

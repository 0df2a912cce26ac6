import type { LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { ValidationError } from '../core/errors.ts';
import { classifyAddress } from './address-class.ts';

export const WEBHOOK_TIMEOUT_MS = 10_000;
const RESPONSE_CAP = 2048;

/** Where webhooks may go: public addresses over https, unless private targets are allowed (dev/tests). */
export interface TargetPolicy {
  allowPrivate: boolean;
  /**
   * This machine (localhost, *.localhost, 127.0.0.0/8, ::1), over http or https: set for webhooks
   * on a server whose public URL is itself local (webhookPolicy in endpoints.ts).
   */
  allowLoopback?: boolean;
  dnsServers: string[];
}

/** How a refusal names what was given: the field, the rule it broke, and what would allow it. */
export interface TargetNaming {
  field: string;
  rule: string;
  /** Said after a refusal of plain http or of an address: what lets it through, in people's words. */
  hint?: string;
}
const WEBHOOK_URL: TargetNaming = { field: '`url`', rule: 'webhooks go to public addresses only' };

const withHint = (message: string, naming: TargetNaming) =>
  naming.hint ? `${message}. ${naming.hint}` : message;

/** localhost and its subdomains (RFC 6761), or a loopback IP literal. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return isIP(host) !== 0 && classifyAddress(host) === 'loopback';
}

/**
 * Checks a webhook URL's form: absolute http(s), no credentials; https unless private targets are
 * allowed, or the URL names this machine and the policy allows loopback.
 */
export function checkWebhookUrl(
  value: unknown,
  policy: TargetPolicy,
  naming: TargetNaming = WEBHOOK_URL,
): URL {
  const field = naming.field;
  if (value === undefined || value === null || value === '')
    throw new ValidationError(`${field} is required`);
  if (typeof value !== 'string' || value.length > 2000)
    throw new ValidationError(`${field} must be a URL string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError(`${field} is not a valid URL: "${value.slice(0, 100)}"`);
  }
  const plainHttpAllowed = policy.allowPrivate || (policy.allowLoopback && isLoopbackHost(url.hostname));
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainHttpAllowed))
    throw new ValidationError(
      withHint(`${field} must use https (got ${url.protocol.replace(':', '')})`, naming),
    );
  if (url.username || url.password)
    throw new ValidationError(`${field} must not contain a user name or password`);
  return url;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function refuse(host: string, address: string, naming: TargetNaming): never {
  throw new ValidationError(
    withHint(
      `${naming.field} points to ${address === host ? host : `${host} (${address})`}, a ${classifyAddress(address).replace('_', '-')} address: ${naming.rule}`,
      naming,
    ),
  );
}

/** Every address the host resolves to must be public (unless allowed); an IP literal is judged as it is. */
export async function resolveTarget(
  url: URL,
  policy: TargetPolicy,
  naming: TargetNaming = WEBHOOK_URL,
): Promise<LookupAddress[]> {
  const host = hostOf(url);
  const family = isIP(host);
  if (family) {
    const allowed = policy.allowPrivate || (policy.allowLoopback && classifyAddress(host) === 'loopback');
    if (!allowed && classifyAddress(host) !== 'public') refuse(host, host, naming);
    return [{ address: host, family }];
  }
  // this machine by name: its loopback addresses, never a DNS answer
  if (policy.allowLoopback && isLoopbackHost(host))
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  if (!policy.allowPrivate && (host === 'localhost' || host.endsWith('.localhost')))
    refuse(host, '127.0.0.1', naming);
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (policy.dnsServers.length > 0) resolver.setServers(policy.dnsServers);
  const [v4, v6] = await Promise.all([
    resolver.resolve4(host).catch(() => [] as string[]),
    resolver.resolve6(host).catch(() => [] as string[]),
  ]);
  const addresses = [
    ...v4.map((a) => ({ address: a, family: 4 })),
    ...v6.map((a) => ({ address: a, family: 6 })),
  ];
  if (addresses.length === 0) {
    if (policy.allowPrivate && host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
    throw new ValidationError(`${naming.field}: the host ${host} does not resolve`);
  }
  if (!policy.allowPrivate) {
    for (const a of addresses) if (classifyAddress(a.address) !== 'public') refuse(host, a.address, naming);
  }
  return addresses;
}

/**
 * A socket lookup answered with the addresses already judged: a DNS answer that changes between
 * the check and the connection cannot send it elsewhere.
 */
export function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return (_host, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  };
}

export interface PostResult {
  statusCode: number | null;
  latencyMs: number;
  excerpt: string | null;
  error: string | null;
}

/**
 * POSTs a signed delivery. The connection goes to an address checked here (the socket's lookup is
 * answered with it), so a DNS answer that changes between check and connect cannot redirect it;
 * redirects are not followed; at most 10 s; only the first 2 KB of the answer is kept.
 */
export async function postWebhook(
  url: URL,
  policy: TargetPolicy,
  headers: Record<string, string>,
  body: string,
  naming: TargetNaming = WEBHOOK_URL,
): Promise<PostResult> {
  const started = Date.now();
  let addresses: LookupAddress[];
  try {
    addresses = await resolveTarget(url, policy, naming);
  } catch (err) {
    return {
      statusCode: null,
      latencyMs: Date.now() - started,
      excerpt: null,
      error: (err as Error).message,
    };
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: Omit<PostResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...r, latencyMs: Date.now() - started });
    };
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Posthorn-Webhooks/1', ...headers },
        timeout: WEBHOOK_TIMEOUT_MS,
        lookup: pinnedLookup(addresses),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (c: Buffer) => {
          if (size < RESPONSE_CAP) chunks.push(c);
          size += c.length;
          if (size > 64 * 1024) response.destroy(); // no more than a small read from any answer
        });
        const finish = () =>
          done({
            statusCode: response.statusCode ?? null,
            excerpt: Buffer.concat(chunks).subarray(0, RESPONSE_CAP).toString('utf8'),
            error: null,
          });
        response.on('end', finish);
        response.on('close', finish);
      },
    );
    const deadline = setTimeout(
      () => request.destroy(new Error(`timed out after ${WEBHOOK_TIMEOUT_MS / 1000} s`)),
      WEBHOOK_TIMEOUT_MS,
    );
    request.on('timeout', () => request.destroy(new Error(`timed out after ${WEBHOOK_TIMEOUT_MS / 1000} s`)));
    request.on('error', (err) => done({ statusCode: null, excerpt: null, error: err.message }));
    request.on('close', () => clearTimeout(deadline));
    request.end(body);
  });
}

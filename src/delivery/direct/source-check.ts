import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { SourceAddress } from '../routes/config.ts';

/**
 * What a receiving server checks of a sender's address before anything else: that its reverse
 * DNS (PTR) names a host that resolves back to it (forward-confirmed reverse DNS), and, by many,
 * that the name given in EHLO is that host. Checked once when a worker starts, for each source
 * address of a direct route; every problem is said plainly, none stops the worker.
 */

/** What the check needs of DNS. */
export interface ReverseDns {
  ptr(address: string): Promise<string[]>;
  addresses(host: string): Promise<{ address: string; family: 4 | 6 }[]>;
}

/** Whether `address` is one of this machine's (an interface's, or within the loopback range). */
export function isLocalAddress(address: string, interfaces = networkInterfaces()): boolean {
  if (isIP(address) === 4 && address.startsWith('127.')) return true;
  if (address === '::1') return true;
  return Object.values(interfaces).some((list) => (list ?? []).some((i) => i.address === address));
}

/** The problems of a route's source addresses, one line each (none: all is well). */
export async function checkSourceAddresses(
  route: string,
  sources: SourceAddress[],
  dns: ReverseDns,
  interfaces = networkInterfaces(),
): Promise<string[]> {
  const problems: string[] = [];
  for (const source of sources) {
    if (!isLocalAddress(source.address, interfaces))
      problems.push(
        `route ${route}, source address ${source.address}: not an address of this machine, so no connection can be made from it`,
      );
    problems.push(...(await reverseDnsProblems(route, [source], dns)));
  }
  return problems;
}

/**
 * Forward-confirmed reverse DNS of each source address (its PTR names a host that resolves back to
 * it) and its EHLO name being that host: the problems, one line each (none: all is well).
 */
export async function reverseDnsProblems(
  route: string,
  sources: SourceAddress[],
  dns: ReverseDns,
): Promise<string[]> {
  const problems: string[] = [];
  for (const { address, ehlo } of sources) {
    const at = `route ${route}, source address ${address}`;
    let names: string[];
    try {
      names = await dns.ptr(address);
    } catch (err) {
      problems.push(`${at}: its reverse DNS could not be looked up (${(err as Error).message})`);
      continue;
    }
    if (names.length === 0) {
      problems.push(
        `${at}: has no reverse DNS (PTR); receivers often refuse or junk mail from such an address: ask its provider to set it to ${ehlo}`,
      );
      continue;
    }
    const confirmed: string[] = [];
    for (const name of names) {
      const back = await dns.addresses(name).catch(() => []);
      if (back.some((a) => a.address === address)) confirmed.push(name);
    }
    if (confirmed.length === 0) {
      problems.push(
        `${at}: its reverse DNS names ${names.join(', ')}, which does not resolve back to it; publish an A or AAAA record for it`,
      );
      continue;
    }
    if (!confirmed.includes(ehlo))
      problems.push(
        `${at}: says EHLO ${ehlo} but its reverse DNS names ${confirmed.join(', ')}; give it the same name`,
      );
  }
  return problems;
}

import { networkInterfaces } from 'node:os';
import {
  type AddressClass,
  canonicalAddress,
  classifyAddress,
  inNetwork,
  type Network,
} from '../address-class.ts';
import type { DirectRoute } from '../routes/config.ts';
import type { MxHost } from './mx.ts';

/**
 * Where a direct route may connect (issue 47): the same address classes as webhooks
 * (delivery/address-class.ts). A recipient's DNS is written by whoever owns the domain, so
 * an MX (or a domain's own address) on 127.0.0.1, a private network or a cloud's metadata service
 * would hand the whole signed message to a service inside the operator's network. Public
 * addresses are reached; loopback, private, link-local and reserved ones only in a network the
 * route's `allow_networks` names; unspecified, multicast and metadata addresses never; nor this
 * server's own addresses (a mail loop, bounced as Postfix bounces "mail for X loops back to
 * myself"), whatever the route allows. The MTA-STS policy fetch asks the same guard.
 */

/** Why an address is refused: its class, or `own` (an address of this server). */
export type Refused = Exclude<AddressClass, 'public'> | 'own';

/** Classes no `allow_networks` lets through. */
const NEVER: ReadonlySet<AddressClass> = new Set(['unspecified', 'multicast', 'metadata']);

/** How long the machine's own addresses are kept before they are read again (they may change). */
const OWN_FOR_MS = 60_000;

/** This machine's addresses on its network interfaces, loopback left to its class (canonical form). */
export function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) =>
    (list ?? []).filter((i) => !i.internal).map((i) => canonicalAddress(i.address.split('%')[0])),
  );
}

export class AddressGuard {
  private readonly allow: Network[];
  private readonly fixedOwn: string[];
  private readonly interfaces: (() => string[]) | null;
  private own = new Set<string>();
  private ownRead = -Infinity;

  /**
   * `allow`: the route's `allow_networks`; `own`: addresses that are this server's besides its
   * interfaces' (the route's source addresses); `interfaces`: how the machine's own are read
   * (null: none, for a test that names them in `own`).
   */
  constructor(allow: Network[], own: string[], interfaces: (() => string[]) | null = interfaceAddresses) {
    this.allow = allow;
    this.fixedOwn = own.map(canonicalAddress);
    this.interfaces = interfaces;
  }

  /** Why a connection to `address` is refused, or null when it may be made. Pure but for the interfaces. */
  refusal(address: string): Refused | null {
    if (this.ownAddresses().has(canonicalAddress(address))) return 'own';
    const kind = classifyAddress(address);
    if (kind === 'public') return null;
    if (NEVER.has(kind)) return kind;
    return this.allow.some((network) => inNetwork(address, network)) ? null : kind;
  }

  private ownAddresses(): ReadonlySet<string> {
    const now = Date.now();
    if (now - this.ownRead > OWN_FOR_MS) {
      this.own = new Set([...this.fixedOwn, ...(this.interfaces?.() ?? [])]);
      this.ownRead = now;
    }
    return this.own;
  }
}

/** One address of a domain's MX hosts that the guard refused. */
export interface RefusedAddress {
  host: string;
  address: string;
  kind: Refused;
}

/** The hosts with only the addresses the guard lets through (hosts left with none dropped), and what it refused. */
export function screenHosts(
  hosts: MxHost[],
  guard: AddressGuard,
): { hosts: MxHost[]; refused: RefusedAddress[] } {
  const refused: RefusedAddress[] = [];
  const kept = hosts.flatMap((mx): MxHost[] => {
    const addresses = mx.addresses.filter(({ address }) => {
      const kind = guard.refusal(address);
      if (kind !== null) refused.push({ host: mx.host, address, kind });
      return kind === null;
    });
    return addresses.length > 0 ? [{ ...mx, addresses }] : [];
  });
  return { hosts: kept, refused };
}

/** How a refused address is named in an answer: `a loopback address`, `an address of this server`. */
export function describeRefused(kind: Refused): string {
  if (kind === 'own') return 'an address of this server';
  const name = kind.replace('_', '-');
  return `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name} address`;
}

/**
 * The permanent answer when every address of every MX host of `domain` was refused, made before
 * any connection: a loop (an address of this server) as Postfix words it (5.4.6), else 5.4.4
 * naming each address and its class.
 */
export function refusedAnswer(domain: string, refused: RefusedAddress[]): { code: number; response: string } {
  const named = refused
    .slice(0, 5)
    .map((r) => `${r.host} (${r.address}) is ${describeRefused(r.kind)}`)
    .join('; ');
  if (refused.some((r) => r.kind === 'own'))
    return { code: 554, response: `554 5.4.6 mail for ${domain} loops back to myself: ${named}` };
  return {
    code: 550,
    response: `550 5.4.4 mail for ${domain} is not delivered to internal addresses: ${named} (a direct route reaches public addresses, and the networks its allow_networks names)`,
  };
}

/** A direct route's guard: its `allow_networks`, its source addresses counted as this server's. */
export function routeGuard(route: Pick<DirectRoute, 'allowNetworks' | 'sourceAddresses'>): AddressGuard {
  return new AddressGuard(
    route.allowNetworks,
    route.sourceAddresses.map((s) => s.address),
  );
}

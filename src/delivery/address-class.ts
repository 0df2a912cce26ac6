import { isIP } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved';

function ipv4Parts(ip: string): number[] {
  return ip.split('.').map(Number);
}

function classifyV4(ip: string): AddressClass {
  const [a, b, c, d] = ipv4Parts(ip);
  if (a === 169 && b === 254 && c === 169) return 'metadata'; // 169.254.169.254 and neighbours (cloud metadata)
  if (a === 100 && b === 100 && c === 100 && d === 200) return 'metadata'; // Alibaba Cloud's, inside 100.64/10
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b >= 64 && b <= 127) return 'private'; // carrier-grade NAT
  if (a === 169 && b === 254) return 'link_local';
  if (a === 192 && b === 0 && c === 0) return 'reserved'; // IETF protocol assignments
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'; // benchmarking
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved';
  return 'public';
}

/** Expands an IPv6 address to its 8 groups (numbers); an embedded IPv4 tail becomes two groups. */
function ipv6Groups(ip: string): number[] {
  let address = ip.toLowerCase().split('%')[0];
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    address = `${address.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = address.split('::');
  const parse = (part: string) => (part ? part.split(':').map((g) => Number.parseInt(g, 16)) : []);
  const h = parse(head);
  const r = rest === undefined ? [] : parse(rest);
  return [...h, ...new Array(Math.max(0, 8 - h.length - r.length)).fill(0), ...r];
}

/** The IPv4 address held in two 16-bit groups, as text. */
function v4Of(high: number, low: number): string {
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

const zero = (groups: number[]) => groups.every((x) => x === 0);

/**
 * The IPv4 address an IPv6 address carries and leads to, for every form that embeds one: mapped
 * (::ffff:0:0/96), translated (::ffff:0:0:0/96), compatible (::/96), NAT64 (64:ff9b::/96), 6to4
 * (2002::/16, the address in bits 16-47) and Teredo (2001::/32, the client's address inverted in
 * the last 32 bits); null for any other address.
 */
function embeddedV4(g: number[]): string | null {
  const tail = v4Of(g[6], g[7]);
  if (zero(g.slice(0, 5)) && (g[5] === 0xffff || g[5] === 0)) return tail; // mapped, compatible
  if (zero(g.slice(0, 4)) && g[4] === 0xffff && g[5] === 0) return tail; // translated
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(g.slice(2, 6))) return tail; // NAT64 well-known
  if (g[0] === 0x2002) return v4Of(g[1], g[2]); // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return v4Of(g[6] ^ 0xffff, g[7] ^ 0xffff); // Teredo client
  return null;
}

function classifyV6(ip: string): AddressClass {
  const g = ipv6Groups(ip);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  // an address that leads to an IPv4 one is judged by that IPv4 address: ::ffff:7f00:1 is loopback
  const v4 = embeddedV4(g);
  if (v4 !== null) {
    const inner = classifyV4(v4);
    if (inner !== 'public') return inner;
    // a NAT64 prefix reaches IPv4 space through the network's translator
    if (g[0] === 0x64 && g[1] === 0xff9b) return 'reserved';
    return 'public';
  }
  if (g[0] === 0xfd00 && g[1] === 0xec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254)
    return 'metadata';
  if ((g[0] & 0xfe00) === 0xfc00) return 'private'; // fc00::/7 unique local
  if ((g[0] & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((g[0] & 0xffc0) === 0xfec0) return 'private'; // fec0::/10 site-local (deprecated, still routed inside sites)
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'reserved'; // documentation
  // 64:ff9b:1::/48 is local-use NAT64 (RFC 8215): a translator of the local network, never public
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'private';
  if (g[0] === 0x64 && g[1] === 0xff9b) return 'reserved'; // the rest of 64:ff9b::/32: IPv4 space
  return 'public';
}

/**
 * What kind of address an IP literal is. Webhooks may only go to `public` addresses (unless
 * POSTHORN_WEBHOOK_ALLOW_PRIVATE), and a direct route's MX hosts and MTA-STS policy hosts too
 * (unless its allow_networks names the network, direct/address-guard.ts): loopback, private,
 * link-local, cloud metadata and the rest would let a caller reach the service's own network.
 * Pure: no lookup, no connection.
 */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip);
  if (family === 4) return classifyV4(ip);
  if (family === 6) return classifyV6(ip);
  throw new Error(`not an IP address: ${ip}`);
}

/** A network named by the operator: `10.0.0.0/8`, `fd00::/8`, or one address (`/32`, `/128`). */
export interface Network {
  /** As written in the configuration, for messages. */
  text: string;
  family: 4 | 6;
  /** The network's first address, as a number of 32 or 128 bits. */
  base: bigint;
  prefix: number;
}

/** An IP literal as a number of 32 (IPv4) or 128 (IPv6) bits. */
function bitsOf(ip: string): { family: 4 | 6; value: bigint } {
  if (isIP(ip) === 4)
    return { family: 4, value: ipv4Parts(ip).reduce((n, part) => (n << 8n) | BigInt(part), 0n) };
  return { family: 6, value: ipv6Groups(ip).reduce((n, group) => (n << 16n) | BigInt(group), 0n) };
}

/** A CIDR network (or one address), or why it is not one. Pure. */
export function parseNetwork(text: string): Network | { error: string } {
  const [address, prefixText, ...rest] = text.trim().split('/');
  const family = isIP(address) as 0 | 4 | 6;
  if (rest.length > 0 || family === 0 || text.includes('%'))
    return {
      error: `"${text}" is not a network: write an address and a prefix length, like 10.0.0.0/8 or fd00::/8`,
    };
  const width = family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText ?? String(width)) || prefix > width)
    return { error: `"${text}": the prefix length must be a whole number from 0 to ${width}` };
  const { value } = bitsOf(address);
  const hostBits = BigInt(width - prefix);
  const base = (value >> hostBits) << hostBits;
  if (base !== value) {
    const first = family === 4 ? v4Of(Number(base >> 16n), Number(base & 0xffffn)) : v6Text(base);
    return { error: `"${text}" has bits set past its /${prefix} prefix: did you mean ${first}/${prefix}?` };
  }
  return { text: text.trim(), family, base, prefix };
}

function v6Text(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  return groups
    .map((g) => g.toString(16))
    .join(':')
    .replace(/(^|:)0(:0)+(:|$)/, '::');
}

/**
 * The address an IP literal is reached at, in one spelling: IPv4 as it is, an IPv4-mapped IPv6
 * address (::ffff:127.0.0.1) as its IPv4 address (the socket connects over IPv4), any other IPv6
 * address as its eight groups. Two spellings of one address compare equal.
 */
export function canonicalAddress(ip: string): string {
  if (isIP(ip) === 4) return ipv4Parts(ip).join('.');
  const g = ipv6Groups(ip);
  if (zero(g.slice(0, 5)) && g[5] === 0xffff) return v4Of(g[6], g[7]);
  return g.map((x) => x.toString(16)).join(':');
}

/** Whether an address lies in a network (an IPv4-mapped IPv6 address in an IPv4 network too). Pure. */
export function inNetwork(ip: string, network: Network): boolean {
  const { family, value } = bitsOf(canonicalAddress(ip));
  if (family !== network.family) return false;
  const hostBits = BigInt((family === 4 ? 32 : 128) - network.prefix);
  return value >> hostBits === network.base >> hostBits;
}

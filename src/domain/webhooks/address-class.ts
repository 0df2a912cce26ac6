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
  const [a, b, c] = ipv4Parts(ip);
  if (a === 169 && b === 254 && c === 169) return 'metadata'; // 169.254.169.254 and neighbours (cloud metadata)
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

function classifyV6(ip: string): AddressClass {
  const g = ipv6Groups(ip);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible: judge the IPv4 address inside
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return classifyV4(`${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`);
  }
  if (g[0] === 0xfd00 && g[1] === 0xec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254)
    return 'metadata';
  if ((g[0] & 0xfe00) === 0xfc00) return 'private'; // fc00::/7 unique local
  if ((g[0] & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'reserved'; // documentation
  if (g[0] === 0x64 && g[1] === 0xff9b) return 'reserved'; // NAT64: would reach IPv4 space
  return 'public';
}

/**
 * What kind of address an IP literal is. Webhooks may only go to `public` addresses (unless
 * POSTHORN_WEBHOOK_ALLOW_PRIVATE): loopback, private, link-local, cloud metadata and the rest
 * would let a caller reach the service's own network. Pure: no lookup, no connection.
 */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip);
  if (family === 4) return classifyV4(ip);
  if (family === 6) return classifyV6(ip);
  throw new Error(`not an IP address: ${ip}`);
}

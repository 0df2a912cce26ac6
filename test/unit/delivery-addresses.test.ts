import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { canonicalAddress, inNetwork, type Network, parseNetwork } from '../../src/delivery/address-class.ts';
import {
  AddressGuard,
  interfaceAddresses,
  refusedAnswer,
  screenHosts,
} from '../../src/delivery/direct/address-guard.ts';
import { parseRoutes, type RoutesError } from '../../src/delivery/routes/config.ts';

/**
 * Where a direct route may connect (issue 47, item 3), judged by the webhooks' address classes.
 * Pure: no lookup, no connection (the guards here are given their own addresses, not the machine's).
 */

const networks = (...texts: string[]): Network[] =>
  texts.map((text) => {
    const network = parseNetwork(text);
    if ('error' in network) throw new Error(network.error);
    return network;
  });

describe('a route that allows no network', () => {
  const guard = new AddressGuard([], ['203.0.113.5', '2001:db8:5::1'], null);
  const cases: [string, string | null][] = [
    ['127.0.0.1', 'loopback'],
    ['127.1.2.3', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.9.9', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:192.168.0.1', 'private'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['2001:db8::25', 'reserved'],
    ['203.0.113.5', 'own'],
    ['::ffff:203.0.113.5', 'own'],
    ['2001:DB8:5:0::1', 'own'],
    ['8.8.8.8', null],
    ['2a00:1450:400c:c0b::1b', null],
    ['::ffff:8.8.8.8', null],
  ];
  for (const [address, refused] of cases)
    it(`${address}: ${refused ?? 'reached'}`, () => expect(guard.refusal(address)).toBe(refused));
});

describe('a route that allows networks', () => {
  const guard = new AddressGuard(
    networks('127.0.0.0/8', '10.0.0.0/8', 'fd00::/8', '169.254.0.0/16', '0.0.0.0/0'),
    ['192.0.2.2'],
    null,
  );
  it('reaches the loopback and private addresses it names (IPv4-mapped ones too)', () => {
    for (const address of [
      '127.0.0.1',
      '127.9.9.9',
      '::ffff:127.0.0.1',
      '10.0.0.7',
      'fd00::2',
      '169.254.1.1',
    ])
      expect(guard.refusal(address), address).toBeNull();
  });
  it('still refuses what it does not name', () => {
    const narrow = new AddressGuard(networks('127.0.0.0/8'), [], null);
    expect(narrow.refusal('::1')).toBe('loopback');
    expect(narrow.refusal('10.0.0.1')).toBe('private');
    expect(narrow.refusal('fe80::1')).toBe('link_local');
  });
  it('never reaches metadata, unspecified or multicast addresses, nor its own', () => {
    expect(guard.refusal('169.254.169.254')).toBe('metadata');
    expect(new AddressGuard(networks('100.64.0.0/10'), [], null).refusal('100.100.100.200')).toBe('metadata');
    expect(new AddressGuard(networks('100.64.0.0/10'), [], null).refusal('100.100.100.201')).toBeNull();
    expect(guard.refusal('0.0.0.0')).toBe('unspecified');
    expect(guard.refusal('224.0.0.5')).toBe('multicast');
    expect(new AddressGuard(networks('fd00::/8'), [], null).refusal('fd00:ec2::254')).toBe('metadata');
    expect(guard.refusal('192.0.2.2')).toBe('own');
  });
});

describe("the machine's own addresses", () => {
  it("are its interfaces' addresses except loopback", () => {
    const expected = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .filter((i) => !i.internal)
      .map((i) => canonicalAddress(i.address));
    expect(interfaceAddresses()).toEqual(expected);
    expect(interfaceAddresses()).not.toContain('127.0.0.1');
    const guard = new AddressGuard([], []);
    for (const address of expected) expect(guard.refusal(address)).toBe('own');
  });
});

describe('networks', () => {
  it('are read as CIDR, or one address', () => {
    expect(parseNetwork('10.0.0.0/8')).toEqual({
      text: '10.0.0.0/8',
      family: 4,
      base: 0x0a000000n,
      prefix: 8,
    });
    expect(parseNetwork('192.0.2.7')).toMatchObject({ family: 4, prefix: 32 });
    expect(parseNetwork('fd00::/8')).toMatchObject({ family: 6, prefix: 8 });
    expect(parseNetwork('::1')).toMatchObject({ family: 6, base: 1n, prefix: 128 });
  });
  it('say what is wrong with one that is not', () => {
    const errors = [
      '10.0.0.1/8',
      'fd00::1/8',
      '10.0.0.0/33',
      '::/129',
      '10.0.0.0/',
      '10.0.0.0/-1',
      '10.0.0.0/8/8',
      'fe80::/10%eth0',
      'localhost',
    ].map((text) => {
      const parsed = parseNetwork(text);
      return 'error' in parsed ? parsed.error : null;
    });
    expect(errors).toEqual([
      '"10.0.0.1/8" has bits set past its /8 prefix: did you mean 10.0.0.0/8?',
      '"fd00::1/8" has bits set past its /8 prefix: did you mean fd00::/8?',
      '"10.0.0.0/33": the prefix length must be a whole number from 0 to 32',
      '"::/129": the prefix length must be a whole number from 0 to 128',
      '"10.0.0.0/": the prefix length must be a whole number from 0 to 32',
      '"10.0.0.0/-1": the prefix length must be a whole number from 0 to 32',
      '"10.0.0.0/8/8" is not a network: write an address and a prefix length, like 10.0.0.0/8 or fd00::/8',
      '"fe80::/10%eth0" is not a network: write an address and a prefix length, like 10.0.0.0/8 or fd00::/8',
      '"localhost" is not a network: write an address and a prefix length, like 10.0.0.0/8 or fd00::/8',
    ]);
  });
  it('hold the addresses within their prefix, an IPv4-mapped address in an IPv4 network', () => {
    const [v4] = networks('172.16.0.0/12');
    expect(inNetwork('172.31.255.255', v4)).toBe(true);
    expect(inNetwork('172.32.0.0', v4)).toBe(false);
    expect(inNetwork('::ffff:172.20.0.1', v4)).toBe(true);
    const [v6] = networks('2001:db8:10::/48');
    expect(inNetwork('2001:db8:10:ffff::1', v6)).toBe(true);
    expect(inNetwork('2001:db8:11::1', v6)).toBe(false);
    expect(inNetwork('172.20.0.1', v6)).toBe(false);
  });
});

describe('the MX hosts of a domain', () => {
  const guard = new AddressGuard(networks('127.0.0.2/32'), ['198.51.100.9'], null);
  const host = (name: string, ...addresses: string[]) => ({
    host: name,
    preference: 10,
    addresses: addresses.map((address) => ({
      address,
      family: address.includes(':') ? (6 as const) : (4 as const),
    })),
  });

  it('keep only the addresses the guard lets through', () => {
    const screened = screenHosts(
      [
        host('mx1.example', '127.0.0.1', '127.0.0.2'),
        host('mx2.example', '::1'),
        host('mx3.example', '8.8.8.8'),
      ],
      guard,
    );
    expect(screened.hosts.map((h) => [h.host, h.addresses.map((a) => a.address)])).toEqual([
      ['mx1.example', ['127.0.0.2']],
      ['mx3.example', ['8.8.8.8']],
    ]);
    expect(screened.refused).toEqual([
      { host: 'mx1.example', address: '127.0.0.1', kind: 'loopback' },
      { host: 'mx2.example', address: '::1', kind: 'loopback' },
    ]);
  });

  it('refused every one: a bounce naming each address and its class, or the loop', () => {
    const { refused } = screenHosts([host('mx.example', '10.0.0.1', 'fe80::1', '169.254.169.254')], guard);
    expect(refusedAnswer('example.com', refused)).toEqual({
      code: 550,
      response:
        '550 5.4.4 mail for example.com is not delivered to internal addresses: mx.example (10.0.0.1) is a private address; mx.example (fe80::1) is a link-local address; mx.example (169.254.169.254) is a metadata address (a direct route reaches public addresses, and the networks its allow_networks names)',
    });
    const loop = screenHosts([host('mx.example', '198.51.100.9')], guard).refused;
    expect(refusedAnswer('example.com', loop)).toEqual({
      code: 554,
      response:
        '554 5.4.6 mail for example.com loops back to myself: mx.example (198.51.100.9) is an address of this server',
    });
  });
});

describe('allow_networks in the routes file', () => {
  const parse = (allow: unknown) =>
    parseRoutes({
      routes: { direct: { type: 'direct', allow_networks: allow } },
      rules: [{ match: {}, routes: ['direct'] }],
    }).routes.get('direct');

  it('is read into networks; none by default', () => {
    expect(parse(['127.0.0.0/8', 'fd00::/8'])).toMatchObject({
      allowNetworks: [
        { text: '127.0.0.0/8', family: 4, prefix: 8 },
        { text: 'fd00::/8', family: 6, prefix: 8 },
      ],
    });
    expect(parse(undefined)).toMatchObject({ allowNetworks: [] });
  });

  it('names each problem at load', () => {
    const problems = (allow: unknown) => {
      try {
        parse(allow);
        return [];
      } catch (err) {
        return (err as RoutesError).problems;
      }
    };
    expect(problems('127.0.0.0/8')).toEqual([
      'routes.direct.allow_networks: must be a list of networks, like ["10.0.0.0/8", "fd00::/8"]',
    ]);
    expect(problems(['127.0.0.1/8', 8, 'intranet'])).toEqual([
      'routes.direct.allow_networks[0]: "127.0.0.1/8" has bits set past its /8 prefix: did you mean 127.0.0.0/8?',
      'routes.direct.allow_networks[1]: must be a network as a string, like "10.0.0.0/8"',
      'routes.direct.allow_networks[2]: "intranet" is not a network: write an address and a prefix length, like 10.0.0.0/8 or fd00::/8',
    ]);
  });
});

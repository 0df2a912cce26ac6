import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DnsTemporaryError, MxResolver, parseDnsServer } from '../../src/delivery/direct/mx.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';

/**
 * Finding the way to a domain's mail servers (RFC 5321 §5.1, RFC 7505) against a real DNS server
 * on 127.0.0.1: MX by preference with equal preferences shuffled, addresses of both families, the
 * implicit MX, the null MX, NXDOMAIN, answers cached for their TTL, and failures as temporary.
 */
let dns: TestDnsServer;
let clock = 1_000_000;
const resolver = (random?: (n: number) => number) =>
  new MxResolver({ servers: [dns.address], now: () => clock, random });

beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(async () => {
  await dns?.close();
});
beforeEach(() => {
  dns.zone.clear();
  dns.failing.clear();
  dns.asked.length = 0;
  dns.negativeTtl = 60;
});

describe('the way to a domain', () => {
  it('orders MX hosts by preference and gives each its IPv4 and IPv6 addresses', async () => {
    dns.zone.set('shop.test', [
      { type: 'MX', exchange: 'backup.shop.test', priority: 20 },
      { type: 'MX', exchange: 'MX1.Shop.test.', priority: 10 },
    ]);
    dns.zone.set('mx1.shop.test', [
      { type: 'A', address: '127.0.0.2' },
      { type: 'AAAA', address: '::1' },
    ]);
    dns.zone.set('backup.shop.test', [{ type: 'A', address: '127.0.0.3' }]);
    const way = await resolver().resolve('Shop.Test');
    expect(way).toEqual({
      kind: 'hosts',
      implicit: false,
      hosts: [
        {
          host: 'mx1.shop.test',
          preference: 10,
          addresses: [
            { address: '127.0.0.2', family: 4 },
            { address: '::1', family: 6 },
          ],
        },
        { host: 'backup.shop.test', preference: 20, addresses: [{ address: '127.0.0.3', family: 4 }] },
      ],
    });
  });

  it('shuffles hosts of equal preference, never across preferences', async () => {
    dns.zone.set('many.test', [
      { type: 'MX', exchange: 'a.many.test', priority: 5 },
      { type: 'MX', exchange: 'b.many.test', priority: 5 },
      { type: 'MX', exchange: 'c.many.test', priority: 5 },
      { type: 'MX', exchange: 'z.many.test', priority: 50 },
    ]);
    for (const h of ['a', 'b', 'c', 'z'])
      dns.zone.set(`${h}.many.test`, [{ type: 'A', address: '127.0.0.4' }]);
    const orders = new Set<string>();
    // every choice of the shuffle's random numbers: each first host comes first in some order
    for (const pick of [0, 1, 2, 3]) {
      const way = await resolver((n) => Math.min(pick, n - 1)).resolve('many.test');
      if (way.kind !== 'hosts') throw new Error('expected hosts');
      expect(way.hosts.at(-1)?.host).toBe('z.many.test');
      orders.add(
        way.hosts
          .slice(0, 3)
          .map((h) => h.host)
          .join(','),
      );
    }
    expect(orders.size).toBeGreaterThan(1);
    for (const order of orders)
      expect(order.split(',').sort()).toEqual(['a.many.test', 'b.many.test', 'c.many.test']);
  });

  it("uses the domain's own address as an implicit MX when it has no MX", async () => {
    dns.zone.set('plain.test', [{ type: 'A', address: '127.0.0.5' }]);
    expect(await resolver().resolve('plain.test')).toEqual({
      kind: 'hosts',
      implicit: true,
      hosts: [{ host: 'plain.test', preference: 0, addresses: [{ address: '127.0.0.5', family: 4 }] }],
    });
  });

  it('refuses at once a null MX, a domain that does not exist and one with neither MX nor address', async () => {
    dns.zone.set('nomail.test', [{ type: 'MX', exchange: '', priority: 0 }]);
    dns.zone.set('bare.test', [{ type: 'TXT', data: 'v=spf1 -all' }]);
    const r = resolver();
    expect(await r.resolve('nomail.test')).toEqual({
      kind: 'refused',
      reason: 'the domain nomail.test accepts no mail (null MX, RFC 7505)',
    });
    // a null MX is final: nobody asks for an address of "."
    expect(dns.asked).toEqual(['MX nomail.test']);
    expect(await r.resolve('missing.test')).toEqual({
      kind: 'refused',
      reason: 'the domain missing.test does not exist (NXDOMAIN)',
    });
    expect(await r.resolve('bare.test')).toEqual({
      kind: 'refused',
      reason: 'the domain bare.test has no MX and no address record',
    });
  });

  it('keeps each answer for its TTL, a negative one for the SOA minimum, then asks again', async () => {
    dns.negativeTtl = 30;
    dns.zone.set('cached.test', [{ type: 'MX', exchange: 'mx.cached.test', priority: 10, ttl: 300 }]);
    dns.zone.set('mx.cached.test', [{ type: 'A', address: '127.0.0.6', ttl: 120 }]);
    const r = resolver();
    await r.resolve('cached.test');
    expect(dns.asked.sort()).toEqual(['A mx.cached.test', 'AAAA mx.cached.test', 'MX cached.test']);
    dns.asked.length = 0;
    clock += 29_000;
    await r.resolve('cached.test');
    expect(dns.asked).toEqual([]); // all cached, the missing AAAA too (30 s)
    clock += 2_000;
    await r.resolve('cached.test');
    expect(dns.asked).toEqual(['AAAA mx.cached.test']);
    dns.asked.length = 0;
    clock += 100_000; // 131 s: the A record (120 s) has expired, the MX (300 s) has not
    dns.zone.set('mx.cached.test', [{ type: 'A', address: '127.0.0.7', ttl: 120 }]);
    const way = await r.resolve('cached.test');
    expect(dns.asked.sort()).toEqual(['A mx.cached.test', 'AAAA mx.cached.test']);
    expect(way.kind === 'hosts' && way.hosts[0].addresses).toEqual([{ address: '127.0.0.7', family: 4 }]);
  });

  it('answers SERVFAIL, and MX hosts that exist without any address, as temporary', async () => {
    dns.failing.add('broken.test');
    await expect(resolver().resolve('broken.test')).rejects.toBeInstanceOf(DnsTemporaryError);
    // the host's name exists (it has a TXT record) but no address: perhaps for now
    dns.zone.set('bare.dangling.test', [{ type: 'TXT', data: 'no address here' }]);
    dns.zone.set('dangling.test', [{ type: 'MX', exchange: 'bare.dangling.test', priority: 10 }]);
    await expect(resolver().resolve('dangling.test')).rejects.toThrow(
      'no MX host of dangling.test has an address (bare.dangling.test)',
    );
  });

  it('refuses a domain none of whose MX hosts exists (NXDOMAIN): a bounce, as Postfix does', async () => {
    dns.zone.set('ghostly.test', [
      { type: 'MX', exchange: 'gone.ghostly.test', priority: 10 },
      { type: 'MX', exchange: 'also-gone.ghostly.test', priority: 20 },
    ]);
    await expect(resolver().resolve('ghostly.test')).resolves.toEqual({
      kind: 'refused',
      reason: 'no MX host of ghostly.test exists (NXDOMAIN: gone.ghostly.test, also-gone.ghostly.test)',
      code: '550 5.4.4',
    });
  });

  it('reads POSTHORN_DNS_SERVERS entries with and without a port, IPv6 too', () => {
    expect(parseDnsServer('127.0.0.1')).toEqual({ address: '127.0.0.1', port: 53 });
    expect(parseDnsServer('127.0.0.1:5353')).toEqual({ address: '127.0.0.1', port: 5353 });
    expect(parseDnsServer('::1')).toEqual({ address: '::1', port: 53 });
    expect(parseDnsServer('[::1]:5353')).toEqual({ address: '::1', port: 5353 });
  });
});

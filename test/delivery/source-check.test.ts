import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MxResolver, reverseName } from '../../src/delivery/direct/mx.ts';
import { checkSourceAddresses, isLocalAddress } from '../../src/delivery/direct/source-check.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';

/**
 * A direct route's source addresses checked as receivers check them (issue 32, item 5): reverse
 * DNS that names a host resolving back to the address, and the EHLO name that host's; against a
 * real DNS server on 127.0.0.1. Every problem is one plain line.
 */
let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
  dns.zone.set('10.0.0.127.in-addr.arpa', [{ type: 'PTR', domain: 'mta1.sender.test.' }]);
  dns.zone.set('mta1.sender.test', [{ type: 'A', address: '127.0.0.10' }]);
  dns.zone.set('11.0.0.127.in-addr.arpa', [{ type: 'PTR', domain: 'elsewhere.sender.test' }]);
  dns.zone.set('elsewhere.sender.test', [{ type: 'A', address: '127.0.0.99' }]);
});
afterAll(async () => {
  await dns?.close();
});

const check = (sources: { address: string; ehlo: string }[]) =>
  checkSourceAddresses('direct', sources, new MxResolver({ servers: [dns.address] }));

describe('source addresses', () => {
  it('passes an address whose reverse DNS names its EHLO host, which resolves back to it', async () => {
    expect(await check([{ address: '127.0.0.10', ehlo: 'mta1.sender.test' }])).toEqual([]);
  });

  it('names each problem: no PTR, a PTR that does not resolve back, another EHLO name, not this machine', async () => {
    expect(
      await check([
        { address: '127.0.0.12', ehlo: 'mta3.sender.test' },
        { address: '127.0.0.11', ehlo: 'mta2.sender.test' },
        { address: '127.0.0.10', ehlo: 'mail.sender.test' },
        { address: '203.0.113.10', ehlo: 'mta9.sender.test' },
      ]),
    ).toEqual([
      'route direct, source address 127.0.0.12: has no reverse DNS (PTR); receivers often refuse or junk mail from such an address: ask its provider to set it to mta3.sender.test',
      'route direct, source address 127.0.0.11: its reverse DNS names elsewhere.sender.test, which does not resolve back to it; publish an A or AAAA record for it',
      'route direct, source address 127.0.0.10: says EHLO mail.sender.test but its reverse DNS names mta1.sender.test; give it the same name',
      'route direct, source address 203.0.113.10: not an address of this machine, so no connection can be made from it',
      'route direct, source address 203.0.113.10: has no reverse DNS (PTR); receivers often refuse or junk mail from such an address: ask its provider to set it to mta9.sender.test',
    ]);
  });
});

describe('the names and addresses checked', () => {
  it('writes the reverse name of IPv4 and IPv6 addresses', () => {
    expect(reverseName('203.0.113.10')).toBe('10.113.0.203.in-addr.arpa');
    expect(reverseName('2001:db8::1')).toBe(
      '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa',
    );
  });

  it('knows the loopback range and the interfaces as this machine', () => {
    const interfaces = { eth0: [{ address: '198.51.100.7' }] } as unknown as Parameters<
      typeof isLocalAddress
    >[1];
    expect(isLocalAddress('127.0.0.42', interfaces)).toBe(true);
    expect(isLocalAddress('198.51.100.7', interfaces)).toBe(true);
    expect(isLocalAddress('198.51.100.8', interfaces)).toBe(false);
  });
});

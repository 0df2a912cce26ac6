import { describe, expect, it } from 'vitest';
import { classifyAddress } from '../../src/domain/webhooks/address-class.ts';
import { checkWebhookUrl, resolveTarget } from '../../src/domain/webhooks/target.ts';

/**
 * IPv6 addresses that lead to an IPv4 address are judged by that address, and site-local IPv6 is
 * private. Pure: IP literals are classified without a lookup and nothing is connected to.
 */

const policy = { allowPrivate: false, dnsServers: [] };

describe('an IPv6 address that embeds a private IPv4 address is not public', () => {
  const cases: [string, string, string][] = [
    // [address, form, expected class]
    ['::ffff:0:7f00:1', 'IPv4-translated 127.0.0.1', 'loopback'],
    ['::ffff:0:a00:1', 'IPv4-translated 10.0.0.1', 'private'],
    ['::ffff:0:a9fe:a9fe', 'IPv4-translated 169.254.169.254', 'metadata'],
    ['::ffff:7f00:1', 'IPv4-mapped 127.0.0.1', 'loopback'],
    ['::ffff:c0a8:101', 'IPv4-mapped 192.168.1.1', 'private'],
    ['::7f00:1', 'IPv4-compatible 127.0.0.1', 'loopback'],
    ['::a00:1', 'IPv4-compatible 10.0.0.1', 'private'],
    ['64:ff9b::7f00:1', 'NAT64 127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 169.254.169.254', 'metadata'],
    ['64:ff9b:1::7f00:1', 'local-use NAT64', 'private'],
    ['64:ff9b:1:7f00:1::', 'local-use NAT64 (/48 form)', 'private'],
    ['2002:7f00:1::', '6to4 of 127.0.0.1', 'loopback'],
    ['2002:a00:1::1', '6to4 of 10.0.0.1', 'private'],
    ['2002:a9fe:a9fe::', '6to4 of 169.254.169.254', 'metadata'],
    ['2002:c0a8:101:1::1', '6to4 of 192.168.1.1', 'private'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo with client 127.0.0.1', 'loopback'],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'Teredo with client 10.0.0.1', 'private'],
    ['fec0::1', 'site-local', 'private'],
    ['feff:ffff::1', 'site-local (end of fec0::/10)', 'private'],
  ];
  for (const [ip, form, kind] of cases) {
    it(`${ip} (${form}) is ${kind}`, () => expect(classifyAddress(ip)).toBe(kind));
  }
});

describe('the same forms around a public IPv4 address', () => {
  it('6to4 and Teredo of a public address stay public', () => {
    expect(classifyAddress('2002:808:808::1')).toBe('public'); // 6to4 of 8.8.8.8
    expect(classifyAddress('2001:0:4136:e378:8000:63bf:f7f7:f7f7')).toBe('public'); // Teredo client 8.8.8.8
    expect(classifyAddress('::ffff:0:808:808')).toBe('public'); // translated 8.8.8.8
  });
  it('NAT64 of a public address stays reserved (it reaches IPv4 space through a translator)', () => {
    expect(classifyAddress('64:ff9b::808:808')).toBe('reserved');
  });
  it('neighbours of site-local are not caught by it', () => {
    expect(classifyAddress('fe80::1')).toBe('link_local');
    expect(classifyAddress('ff00::1')).toBe('multicast');
  });
});

describe('webhook URLs with such addresses are refused before any connection', () => {
  for (const url of [
    'https://[::ffff:0:7f00:1]/',
    'https://[2002:7f00:1::]/',
    'https://[fec0::1]/',
    'https://[64:ff9b::7f00:1]/hook',
    'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/',
    'https://[::ffff:0:a9fe:a9fe]/latest/meta-data',
  ]) {
    it(`refuses ${url}`, async () => {
      await expect(resolveTarget(checkWebhookUrl(url, policy), policy)).rejects.toThrow(
        /`url` points to .* address: webhooks go to public addresses only/,
      );
    });
  }
});

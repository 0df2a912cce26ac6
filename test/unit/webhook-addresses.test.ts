import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { classifyAddress } from '../../src/domain/webhooks/address-class.ts';
import { newWebhookSecret, webhookHeaders } from '../../src/domain/webhooks/signing.ts';

describe('classifyAddress (pure: no lookups, no connections)', () => {
  const cases: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.1', 'private'],
    ['172.32.0.1', 'public'],
    ['172.15.0.1', 'public'],
    ['192.168.1.10', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fe80::1', 'link_local'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', 'public'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['64:ff9b::a00:1', 'private'], // NAT64 of 10.0.0.1: judged by the address inside
    ['2606:4700:4700::1111', 'public'],
  ];
  for (const [ip, kind] of cases) {
    it(`${ip} is ${kind}`, () => expect(classifyAddress(ip)).toBe(kind));
  }
  it('refuses what is not an IP literal', () => {
    expect(() => classifyAddress('localhost')).toThrow(/not an IP address/);
  });
});

describe('Standard Webhooks signatures', () => {
  it('verify with the standardwebhooks package and fail with another secret', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ type: 'email.sent', data: { id: 'x' } });
    const headers = webhookHeaders([secret], 'msg_1', body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it('during a rotation both secrets sign and either verifies', () => {
    const [old, fresh] = [newWebhookSecret(), newWebhookSecret()];
    const body = '{"type":"contact.created"}';
    const headers = webhookHeaders([fresh, old], 'msg_2', body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(old).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(fresh).verify(body, headers)).not.toThrow();
  });
});

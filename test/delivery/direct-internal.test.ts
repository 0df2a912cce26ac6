import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Network, parseNetwork } from '../../src/delivery/address-class.ts';
import { AddressGuard } from '../../src/delivery/direct/address-guard.ts';
import type { OutboundMessage, Transport } from '../../src/delivery/transport.ts';
import { simTransport } from '../helpers/direct-transport.ts';
import { type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * A direct route and internal addresses (issue 47, item 3): a recipient domain's DNS is written by
 * whoever owns it, so an MX or a domain's own address on 127.0.0.1 or ::1 must not receive the
 * signed message, nor an MTA-STS policy host there be fetched from, unless the route's
 * allow_networks names the network. The simulated internet's servers count every connection.
 */

let net: SimInternet;
let loopback: SimServer;
let six: SimServer;
let lan: SimServer;
let ownServer: SimServer;
let stsMx: SimServer;
let policyFetches: { requests: number };
const open: Transport[] = [];

const networks = (...texts: string[]): Network[] =>
  texts.map((text) => {
    const network = parseNetwork(text);
    if ('error' in network) throw new Error(network.error);
    return network;
  });

beforeAll(async () => {
  net = await startSimInternet();
  loopback = await net.server('mx.loop.test', '127.0.0.1');
  net.mx('loop.test', [[10, 'mx.loop.test']]);
  // no MX: the domain's own AAAA record, ::1, is its implicit MX
  six = await net.server('mx.six.test', '::1');
  net.address('six.test', '::1');
  // a second MX beside the loopback one, reachable when its network is allowed
  lan = await net.server('mx2.mixed.test', '127.0.0.51');
  net.mx('mixed.test', [
    [10, 'mx.loop.test'],
    [20, 'mx2.mixed.test'],
  ]);
  ownServer = await net.server('mx.own.test', '127.0.0.52');
  net.mx('own.test', [[10, 'mx.own.test']]);
  // the MX is allowed (127.0.0.53), the policy host on 127.0.0.1 is not: an enforced policy naming
  // another MX would defer the message if it were fetched
  stsMx = await net.server('mx.sts-local.test', '127.0.0.53');
  net.mx('sts-local.test', [[10, 'mx.sts-local.test']]);
  policyFetches = await net.mtaSts(
    'sts-local.test',
    '127.0.0.1',
    'version: STSv1\nmode: enforce\nmx: nowhere.invalid\nmax_age: 86400\n',
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((t) => t.close()));
  await net?.close();
});

let sequence = 0;
function message(to: string[]): OutboundMessage {
  const n = ++sequence;
  const messageId = `<internal${n}@sender.test>`;
  return {
    from: 'news@sender.test',
    to,
    messageId,
    attempt: 1,
    tags: { email: `e${n}`, project: 'p', stream: 'transactional' },
    raw: Buffer.from(
      `From: news@sender.test\r\nTo: ${to.join(', ')}\r\nSubject: internal ${n}\r\nMessage-ID: ${messageId}\r\n\r\nHello\r\n`,
    ),
  };
}

const connections = (server: SimServer) => server.accepted + server.refusedConnections;

describe('a route without allow_networks', () => {
  it('bounces an MX on 127.0.0.1 without opening a connection', async () => {
    const before = connections(loopback);
    const result = await simTransport(net, open, { allowNetworks: [] }).send(message(['reader@loop.test']));
    expect(result.recipients).toMatchObject([
      { recipient: 'reader@loop.test', accepted: false, final: true, responseCode: 550, bounceType: 'block' },
    ]);
    expect(result.recipients[0].response).toBe(
      '550 5.4.4 mail for loop.test is not delivered to internal addresses: mx.loop.test (127.0.0.1) is a loopback address (a direct route reaches public addresses, and the networks its allow_networks names)',
    );
    expect(connections(loopback)).toBe(before);
    expect(loopback.messages).toEqual([]);
  });

  it('bounces a domain whose own address (no MX) is ::1, without opening a connection', async () => {
    const before = connections(six);
    const result = await simTransport(net, open, { allowNetworks: [] }).send(message(['reader@six.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: false, responseCode: 550 });
    expect(result.recipients[0].response).toMatch(/six\.test \(::1\) is a loopback address/);
    expect(connections(six)).toBe(before);
    expect(six.messages).toEqual([]);
  });

  it('skips a refused MX host and delivers to the allowed one', async () => {
    const before = connections(loopback);
    const t = simTransport(net, open, { allowNetworks: networks('127.0.0.51/32') });
    const result = await t.send(message(['reader@mixed.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: true });
    expect(result.recipients[0].via).toMatchObject({ mx: 'mx2.mixed.test', address: '127.0.0.51' });
    expect(connections(loopback)).toBe(before);
    expect(lan.messages.map((m) => m.to)).toEqual([['reader@mixed.test']]);
  });
});

describe('networks the operator allows', () => {
  it('delivers to 127.0.0.1 and ::1 when allow_networks names them', async () => {
    const t = simTransport(net, open, { allowNetworks: networks('127.0.0.0/8', '::1/128') });
    const result = await t.send(message(['a@loop.test', 'b@six.test']));
    expect(result.recipients.map((r) => [r.recipient, r.accepted])).toEqual([
      ['a@loop.test', true],
      ['b@six.test', true],
    ]);
    expect(loopback.messages.map((m) => m.to)).toEqual([['a@loop.test']]);
    expect(six.messages.map((m) => m.to)).toEqual([['b@six.test']]);
  });

  it("bounces mail to this server's own address as a loop, even inside an allowed network", async () => {
    const guard = new AddressGuard(networks('127.0.0.0/8'), ['127.0.0.52'], null);
    const t = simTransport(net, open, {}, { guard });
    const result = await t.send(message(['reader@own.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: false, responseCode: 554, bounceType: 'block' });
    expect(result.recipients[0].response).toBe(
      '554 5.4.6 mail for own.test loops back to myself: mx.own.test (127.0.0.52) is an address of this server',
    );
    expect(connections(ownServer)).toBe(0);
  });
});

describe('MTA-STS', () => {
  it('does not fetch a policy from a host on 127.0.0.1: the domain is taken as having none', async () => {
    const t = simTransport(net, open, { allowNetworks: networks('127.0.0.53/32') });
    const result = await t.send(message(['reader@sts-local.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: true });
    expect(result.recipients[0].via).not.toHaveProperty('mta_sts');
    expect(stsMx.messages.map((m) => m.to)).toEqual([['reader@sts-local.test']]);
    expect(policyFetches.requests).toBe(0);
  });

  it('fetches it when the network is allowed (the policy then holds the message back)', async () => {
    const t = simTransport(net, open, { allowNetworks: networks('127.0.0.53/32', '127.0.0.1/32') });
    const result = await t.send(message(['again@sts-local.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: false, responseCode: 451 });
    expect(result.recipients[0].response).toMatch(/MTA-STS: no MX host of sts-local\.test/);
    expect(policyFetches.requests).toBe(1);
  });
});

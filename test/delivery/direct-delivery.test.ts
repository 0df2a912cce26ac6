import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectOptions } from '../../src/delivery/direct/transport.ts';
import type { DirectRoute } from '../../src/delivery/routes/config.ts';
import type { OutboundMessage, Transport } from '../../src/delivery/transport.ts';
import { simRoute, simTransport } from '../helpers/direct-transport.ts';
import { type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * The direct route against a simulated internet (issue 32): a real DNS server and real mail
 * servers on 127.0.0.x, each behaving like a kind of provider, counting what they saw. The
 * transport is driven as the worker drives it (one message at a time, many at once).
 */

let net: SimInternet;
let plain: SimServer;
let tls: SimServer;
let backup: SimServer;
let grey: SimServer;
let capped: SimServer;
let rated: SimServer;
let picky: SimServer;
let strict: SimServer;
let stsWrong: SimServer;
let stsClear: SimServer;
let stsGood: SimServer;
const open: Transport[] = [];

beforeAll(async () => {
  net = await startSimInternet();
  tls = await net.server('mx.tls.test', '127.0.0.21');
  plain = await net.server('mx.plain.test', '127.0.0.22', { tls: false });
  backup = await net.server('mx2.backup.test', '127.0.0.23');
  grey = await net.server('mx.grey.test', '127.0.0.24', { greylist: true });
  capped = await net.server('mx.capped.test', '127.0.0.25', { maxConnections: 2 });
  rated = await net.server('mx.rated.test', '127.0.0.26', { perMinute: 5 });
  picky = await net.server('mx.picky.test', '127.0.0.27', {
    refuse: new Map([
      ['nobody@picky.test', { code: 550, message: '5.1.1 nobody@picky.test: no such user' }],
      ['later@picky.test', { code: 452, message: '4.2.2 mailbox full, try later' }],
    ]),
  });
  net.mx('tls.test', [[10, 'mx.tls.test']]);
  net.mx('plain.test', [[10, 'mx.plain.test']]);
  // the primary has an address and nothing listening: a dead MX
  net.mx('backup.test', [
    [10, 'mx1.backup.test'],
    [20, 'mx2.backup.test'],
  ]);
  net.address('mx1.backup.test', '127.0.0.30');
  net.mx('grey.test', [[10, 'mx.grey.test']]);
  net.mx('capped.test', [[10, 'mx.capped.test']]);
  net.mx('capped2.test', [[10, 'mx.capped.test']]);
  net.mx('rated.test', [[10, 'mx.rated.test']]);
  net.mx('picky.test', [[10, 'mx.picky.test']]);
  strict = await net.server('mx.strict.test', '127.0.0.38', { maxConnections: 1, delayMs: 200 });
  net.mx('strict.test', [[10, 'mx.strict.test']]);
  net.mx('nomail.test', []);
  // no MX: the domain's own address is its implicit MX (the plain server)
  net.address('bare.test', '127.0.0.22');
  // MTA-STS: certificates signed by the network's CA, right and wrong
  stsWrong = await net.server('mx.sts-wrong.test', '127.0.0.28', {
    certificate: await net.certificate('wrong.test'),
  });
  stsClear = await net.server('mx.sts-clear.test', '127.0.0.31', { tls: false });
  stsGood = await net.server('mx.sts-good.test', '127.0.0.32', {
    certificate: await net.certificate('mx.sts-good.test'),
  });
  const policy = (mode: string, mx: string) => `version: STSv1\nmode: ${mode}\nmx: ${mx}\nmax_age: 86400\n`;
  net.mx('sts-wrong.test', [[10, 'mx.sts-wrong.test']]);
  await net.mtaSts('sts-wrong.test', '127.0.0.33', policy('enforce', 'mx.sts-wrong.test'));
  net.mx('sts-clear.test', [[10, 'mx.sts-clear.test']]);
  await net.mtaSts('sts-clear.test', '127.0.0.34', policy('enforce', '*.sts-clear.test'));
  net.mx('sts-good.test', [[10, 'mx.sts-good.test']]);
  await net.mtaSts('sts-good.test', '127.0.0.35', policy('enforce', '*.sts-good.test'));
  net.mx('sts-testing.test', [[10, 'mx.sts-wrong.test']]);
  await net.mtaSts('sts-testing.test', '127.0.0.36', policy('testing', 'mx.sts-wrong.test'));
  net.mx('sts-other.test', [[10, 'mx.sts-good.test']]);
  await net.mtaSts('sts-other.test', '127.0.0.37', policy('enforce', '*.elsewhere.test'));
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((t) => t.close()));
  await net?.close();
});

function _route(extra: Partial<DirectRoute> = {}): DirectRoute {
  return simRoute(net, extra);
}

function transport(extra: Partial<DirectRoute> = {}, options: Partial<DirectOptions> = {}): Transport {
  return simTransport(net, open, extra, options);
}

let sequence = 0;
function message(to: string[], from = 'news@sender.test'): OutboundMessage {
  const n = ++sequence;
  const messageId = `<m${n}@sender.test>`;
  return {
    from,
    to,
    messageId,
    attempt: 1,
    tags: { email: `e${n}`, project: 'p', stream: 'transactional' },
    raw: Buffer.from(
      `From: ${from}\r\nTo: ${to.join(', ')}\r\nSubject: m${n}\r\nMessage-ID: ${messageId}\r\n\r\nHello ${n}\r\n`,
    ),
  };
}

const connectionsTo = (servers: SimServer[]) =>
  servers.reduce((n, s) => n + s.accepted + s.refusedConnections, 0);

describe('finding the way', () => {
  it('delivers through the backup MX when the primary does not answer', async () => {
    const result = await transport().send(message(['reader@backup.test']));
    expect(result.recipients).toMatchObject([
      { recipient: 'reader@backup.test', accepted: true, final: true },
    ]);
    expect(result.recipients[0].via).toMatchObject({ mx: 'mx2.backup.test', address: '127.0.0.23' });
    expect(backup.messages.map((m) => m.to)).toContainEqual(['reader@backup.test']);
  });

  it('delivers to the domain itself when it has only an address record', async () => {
    const result = await transport().send(message(['someone@bare.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: true });
    expect(result.recipients[0].via).toMatchObject({ mx: 'bare.test', address: '127.0.0.22' });
    expect(plain.messages.some((m) => m.to.includes('someone@bare.test'))).toBe(true);
  });

  it('bounces a null MX domain at once, with no connection made', async () => {
    const before = connectionsTo(net.servers);
    const result = await transport().send(message(['anyone@nomail.test']));
    expect(result.recipients).toMatchObject([
      { recipient: 'anyone@nomail.test', accepted: false, responseCode: 556 },
    ]);
    expect(result.recipients[0].response).toMatch(/null MX/);
    expect(connectionsTo(net.servers)).toBe(before);
  });

  it('gives each domain of a message its own transaction, the recipients of one domain together', async () => {
    const result = await transport().send(
      message(['a@tls.test', 'b@plain.test', 'c@tls.test', 'd@bare.test']),
    );
    expect(result.recipients.every((r) => r.accepted)).toBe(true);
    const last = `m${sequence}`;
    const at = (s: SimServer) => s.messages.filter((m) => m.raw.toString().includes(`Subject: ${last}\r\n`));
    expect(at(tls).map((m) => m.to)).toEqual([['a@tls.test', 'c@tls.test']]);
    // plain.test and bare.test share their server, not their transaction
    expect(at(plain).map((m) => m.to.join(','))).toEqual(
      expect.arrayContaining(['b@plain.test', 'd@bare.test']),
    );
    expect(at(plain)).toHaveLength(2);
  });
});

describe('TLS', () => {
  it('uses STARTTLS when offered and records it on the attempt', async () => {
    const result = await transport().send(message(['x@tls.test']));
    expect(result.recipients[0].via?.tls).toMatch(/^TLSv1\.[23] unverified$/);
    expect(tls.messages.at(-1)?.tls).toBe(true);
  });

  it('delivers in clear to a server without STARTTLS, and says so', async () => {
    const result = await transport().send(message(['x@plain.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: true });
    expect(result.recipients[0].via?.tls).toBeNull();
    expect(plain.messages.at(-1)?.tls).toBe(false);
  });
});

describe('answers', () => {
  it('answers each recipient as the server did: taken, refused for good (hard), or for now', async () => {
    const result = await transport().send(
      message(['ok@picky.test', 'nobody@picky.test', 'later@picky.test']),
    );
    const by = new Map(result.recipients.map((r) => [r.recipient, r]));
    expect(by.get('ok@picky.test')).toMatchObject({ accepted: true, final: true });
    expect(by.get('nobody@picky.test')).toMatchObject({
      accepted: false,
      responseCode: 550,
      bounceType: 'hard',
    });
    expect(by.get('later@picky.test')).toMatchObject({ accepted: false, responseCode: 452 });
    expect(picky.messages.at(-1)?.to).toEqual(['ok@picky.test']);
  });

  it('defers a greylisted message, and the next try from the same address is taken', async () => {
    const t = transport();
    const first = await t.send(message(['reader@grey.test']));
    expect(first.recipients[0]).toMatchObject({ accepted: false, responseCode: 451 });
    const again = await t.send(message(['reader@grey.test']));
    expect(again.recipients[0]).toMatchObject({ accepted: true });
    expect(grey.greylisted).toBe(1);
  });

  it("gives a deferral its site's own retry schedule when the route names one", async () => {
    const t = transport({ sites: new Map([['mx.grey.test', { retrySchedule: [300, 900] }]]) });
    const first = await t.send(message(['later@grey.test']));
    expect(first.recipients[0]).toMatchObject({ accepted: false, responseCode: 451, retryAfterMs: 300_000 });
    const third = await t.send({ ...message(['latest@grey.test']), attempt: 3 });
    expect(third.recipients[0]).toMatchObject({ accepted: false, retryAfterMs: 900_000 });
  });
});

describe('limits', () => {
  it('never opens more connections to a site than it allows, and reuses them up to their share', async () => {
    const t = transport({
      sites: new Map([['mx.capped.test', { maxConnections: 2, messagesPerConnection: 5 }]]),
    });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => t.send(message([`r${i}@${i % 2 ? 'capped' : 'capped2'}.test`]))),
    );
    expect(results.flatMap((r) => r.recipients).filter((r) => !r.accepted)).toEqual([]);
    expect(capped.maxConcurrent).toBeLessThanOrEqual(2);
    expect(capped.refusedConnections).toBe(0);
    // 30 messages at 5 a connection: at least 6 connections, far fewer than 30
    expect(capped.accepted).toBeGreaterThanOrEqual(6);
    expect(capped.accepted).toBeLessThan(30);
    expect(capped.messages).toHaveLength(30);
  });

  it('holds a site that asked to slow down instead of asking it again', async () => {
    const warned: string[] = [];
    const t = transport({}, { warn: (line) => warned.push(line), backoffMs: 600_000 });
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(...(await t.send(message([`r${i}@rated.test`]))).recipients);
    expect(answers.slice(0, 5).every((r) => r.accepted)).toBe(true);
    expect(answers[5]).toMatchObject({ accepted: false, responseCode: 450 });
    // held here: the server was asked once, not eleven times
    for (const r of answers.slice(6))
      expect(r.response).toMatch(/held by Posthorn: the site mx\.rated\.test asked to slow down/);
    expect(rated.rateDeferrals).toBe(1);
    expect(rated.messages).toHaveLength(5);
    expect(warned.join('\n')).toMatch(/asked this machine to slow down: .*4\.7\.28/);
  });

  it('backs off from a site that refuses a connection with 421: fewer connections, then held', async () => {
    // the site takes one connection at once; the route would open five (the default)
    const t = transport({}, { backoffMs: 600_000 });
    const results = (
      await Promise.all(Array.from({ length: 5 }, (_, i) => t.send(message([`q${i}@strict.test`]))))
    ).flatMap((r) => r.recipients);
    const refused = results.filter((r) => !r.accepted);
    expect(results.filter((r) => r.accepted).length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) expect(r.response).toMatch(/421 .*too many connections/);
    const refusedBefore = strict.refusedConnections;
    // held from now on: no more connections asked for
    const later = await t.send(message(['late@strict.test']));
    expect(later.recipients[0]).toMatchObject({ accepted: false, responseCode: 451 });
    expect(later.recipients[0].heldUntil).toBeGreaterThan(Date.now() + 60_000);
    expect(strict.refusedConnections).toBe(refusedBefore);
  });

  it("holds a message for a retry when the site's hourly pace has no slot soon", async () => {
    const t = transport(
      { sites: new Map([['mx.tls.test', { messagesPerHour: 1 }]]) },
      { maxPaceWaitMs: 1000 },
    );
    const first = await t.send(message(['one@tls.test']));
    const second = await t.send(message(['two@tls.test']));
    expect(first.recipients[0]).toMatchObject({ accepted: true });
    expect(second.recipients[0]).toMatchObject({ accepted: false, responseCode: 451 });
    expect(second.recipients[0].response).toMatch(/takes 1 messages an hour/);
  });
});

describe('source addresses', () => {
  it('connects from the configured addresses with their EHLO names, spreading the load', async () => {
    const t = transport({
      sourceAddresses: [
        { address: '127.0.0.10', ehlo: 'mta1.sender.test' },
        { address: '127.0.0.11', ehlo: 'mta2.sender.test' },
      ],
    });
    const before = tls.messages.length;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.send(message([`s${i}@tls.test`]))),
    );
    expect(results.every((r) => r.recipients[0].accepted)).toBe(true);
    const seen = tls.messages.slice(before);
    expect(new Set(seen.map((m) => `${m.peer} ${m.ehlo}`))).toEqual(
      new Set(['127.0.0.10 mta1.sender.test', '127.0.0.11 mta2.sender.test']),
    );
    expect(new Set(results.map((r) => r.recipients[0].via?.source))).toEqual(
      new Set(['127.0.0.10', '127.0.0.11']),
    );
  });
});

describe('MTA-STS', () => {
  it('never gives an enforce domain its message in clear or to a certificate for another name', async () => {
    const t = transport();
    for (const to of ['a@sts-wrong.test', 'b@sts-clear.test']) {
      const result = await t.send(message([to]));
      expect(result.recipients[0], to).toMatchObject({ accepted: false, responseCode: 451 });
      expect(result.recipients[0].response).toMatch(/no mail server took a connection/);
    }
    expect(stsWrong.messages).toEqual([]);
    expect(stsClear.messages).toEqual([]);
  });

  it('delivers to an enforce domain over TLS with a valid certificate, and records the policy', async () => {
    const result = await transport().send(message(['c@sts-good.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: true });
    expect(result.recipients[0].via).toMatchObject({
      mta_sts: 'enforce',
      tls: expect.stringMatching(/^TLSv1\.[23]$/),
    });
    expect(stsGood.messages.at(-1)?.tls).toBe(true);
  });

  it('holds mail for an enforce domain whose MX hosts its policy does not name, with no connection', async () => {
    const before = stsGood.accepted;
    const result = await transport().send(message(['d@sts-other.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: false, responseCode: 451 });
    expect(result.recipients[0].response).toMatch(/MTA-STS: no MX host of sts-other\.test/);
    expect(stsGood.accepted).toBe(before);
  });

  it('delivers to a testing domain as usual, recording the policy and the unverified certificate', async () => {
    const result = await transport().send(message(['e@sts-testing.test']));
    expect(result.recipients[0]).toMatchObject({ accepted: true });
    expect(result.recipients[0].via).toMatchObject({
      mta_sts: 'testing',
      tls: expect.stringMatching(/unverified$/),
    });
  });
});

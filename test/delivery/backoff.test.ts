import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lane } from '../../src/delivery/direct/lanes.ts';
import type { DirectOptions } from '../../src/delivery/direct/transport.ts';
import { type DirectRoute, parseRoutes, type SiteOverride } from '../../src/delivery/routes/config.ts';
import { RFC_PHASE_TIMEOUTS } from '../../src/delivery/routes/direct-config.ts';
import type { OutboundMessage, Transport } from '../../src/delivery/transport.ts';
import { simTransport } from '../helpers/direct-transport.ts';
import { type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * Backing off right (issue 46), on the simulated internet, through the direct route's transport as
 * the scheduler drives it (many messages at once): a 421 is the site's answer, not a lost
 * connection; a hold reaches the messages already waiting for a connection; the hold doubles only
 * when the site refuses again after it; a server whose TLS cannot be negotiated is delivered to in
 * clear; a domain none of whose MX hosts exists bounces; an MTA-STS refusal names its policy.
 */

let net: SimInternet;
let once: SimServer;
let rated: SimServer;
let refusing: SimServer;
let oldTls: SimServer;
let clear: SimServer;
let slowDot: SimServer;
const open: Transport[] = [];

beforeAll(async () => {
  net = await startSimInternet();
  once = await net.server('mx.once.test', '127.0.0.81', { messagesPerConnection: 1 });
  net.mx('once.test', [[10, 'mx.once.test']]);
  rated = await net.server('mx.rated.test', '127.0.0.82', { perMinute: 2, delayMs: 100 });
  net.mx('rated.test', [[10, 'mx.rated.test']]);
  refusing = await net.server('mx.refusing.test', '127.0.0.83', { perMinute: 0 });
  net.mx('refusing.test', [[10, 'mx.refusing.test']]);
  oldTls = await net.server('mx.oldtls.test', '127.0.0.84', { tlsVersion: 'TLSv1' });
  slowDot = await net.server('mx.slowdot.test', '127.0.0.87', { tarpit: true });
  await net.server('mx.stuckmail.test', '127.0.0.88', { stallAt: 'mail' });
  net.mx('stuckmail.test', [[10, 'mx.stuckmail.test']]);
  await net.server('mx.stuckrcpt.test', '127.0.0.89', { stallAt: 'rcpt' });
  net.mx('stuckrcpt.test', [[10, 'mx.stuckrcpt.test']]);
  net.mx('slowdot.test', [[10, 'mx.slowdot.test']]);
  net.mx('oldtls.test', [[10, 'mx.oldtls.test']]);
  // MX hosts that do not exist (NXDOMAIN), and one domain with one that exists and one that does not
  net.mx('ghost.test', [
    [10, 'mx1.ghost.test'],
    [20, 'mx2.ghost.test'],
  ]);
  clear = await net.server('mx.clear.test', '127.0.0.85', { tls: false });
  net.mx('clear.test', [[10, 'mx.clear.test']]);
  await net.mtaSts(
    'clear.test',
    '127.0.0.86',
    'version: STSv1\nmode: enforce\nmx: mx.clear.test\nmax_age: 86400\n',
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((t) => t.close()));
  await net?.close();
});

function transport(
  sites: [string, SiteOverride][] = [],
  options: Partial<DirectOptions> = {},
  extra: Partial<DirectRoute> = {},
): Transport {
  return simTransport(net, open, { sites: new Map(sites), ...extra }, options);
}

let sequence = 0;
function message(to: string): OutboundMessage {
  const n = ++sequence;
  const messageId = `<b${n}@sender.test>`;
  return {
    from: 'news@sender.test',
    to: [to],
    messageId,
    attempt: 1,
    tags: { email: `e${n}`, project: 'p', stream: 'transactional' },
    raw: Buffer.from(
      `From: news@sender.test\r\nTo: ${to}\r\nSubject: b${n}\r\nMessage-ID: ${messageId}\r\n\r\nHi\r\n`,
    ),
  };
}

describe('a 421 on a reused connection', () => {
  it('is the site answering: the connection ends, the message is deferred, nothing is sent again at once', async () => {
    const t = transport([['mx.once.test', { maxConnections: 1 }]], { backoffMs: 60_000 });
    const first = await t.send(message('a@once.test'));
    expect(first.recipients[0]).toMatchObject({ accepted: true });
    const second = await t.send(message('b@once.test'));
    expect(second.recipients[0]).toMatchObject({ accepted: false, responseCode: 421 });
    expect(second.recipients[0].response).toMatch(/421/);
    expect(second.recipients[0].retryAfterMs).toBeGreaterThanOrEqual(59_000);
    // the one connection it had, not a second one for the same message
    expect(once.accepted).toBe(1);
    expect(once.messages.map((m) => m.to)).toEqual([['a@once.test']]);
  });
});

describe('a site that asks to slow down', () => {
  it('holds at once every message waiting for its connection, without trying them', async () => {
    const t = transport([['mx.rated.test', { maxConnections: 1 }]], { backoffMs: 60_000 });
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.send(message(`r${i}@rated.test`))),
    );
    const answers = results.map((r) => r.recipients[0]);
    expect(answers.filter((a) => a.accepted)).toHaveLength(2);
    // the third was refused (4.7.28); the three waiting behind it were held, never tried
    expect(rated.rateDeferrals).toBe(1);
    const held = answers.filter((a) => a.heldUntil !== undefined);
    expect(held).toHaveLength(3);
    for (const a of held) {
      expect(a.heldUntil).toBeGreaterThanOrEqual(started + 59_000);
      expect(a.response).toMatch(/4\.7\.28/);
    }
  });

  it('doubles the hold only when the site refuses again after it, not for each refusal of one burst', async () => {
    const t = transport([['mx.refusing.test', { maxConnections: 5 }]], { backoffMs: 1_000 });
    // five at once, each on its own connection: one burst of refusals
    const burst = Date.now();
    const first = await Promise.all(
      Array.from({ length: 5 }, (_, i) => t.send(message(`x${i}@refusing.test`))),
    );
    const holds = first.map((r) => r.recipients[0]);
    for (const a of holds) {
      expect(a.accepted).toBe(false);
      const until = a.heldUntil ?? (a.retryAfterMs ?? 0) + burst;
      expect(until - burst).toBeLessThan(2_000);
    }
    // after the hold, refused again: the next hold is twice as long
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const again = Date.now();
    const next = (await t.send(message('y@refusing.test'))).recipients[0];
    expect(next.accepted).toBe(false);
    expect(next.retryAfterMs).toBeGreaterThanOrEqual(1_900);
    expect(next.retryAfterMs).toBeLessThan(2_500);
    const waiting = (await t.send(message('z@refusing.test'))).recipients[0];
    expect((waiting.heldUntil ?? 0) - again).toBeGreaterThanOrEqual(1_900);
    expect(refusing.rateDeferrals).toBe(6);
  });
});

describe('opportunistic TLS (RFC 3207, RFC 7435)', () => {
  it('delivers in clear to a server whose STARTTLS offers only TLS 1.0', async () => {
    const result = await transport().send(message('reader@oldtls.test'));
    expect(result.recipients[0], result.recipients[0].response).toMatchObject({ accepted: true });
    expect(result.recipients[0].via?.tls).toBeNull();
    expect(oldTls.messages.map((m) => m.to)).toEqual([['reader@oldtls.test']]);
  });

  it('never falls back to clear where an MTA-STS policy enforces TLS, and says so', async () => {
    const result = await transport().send(message('reader@clear.test'));
    const answer = result.recipients[0];
    expect(answer.accepted).toBe(false);
    expect(answer.responseCode).toBeGreaterThanOrEqual(400);
    expect(answer.responseCode).toBeLessThan(500);
    expect(answer.response).toMatch(/MTA-STS/);
    expect(answer.response).toMatch(/clear\.test/);
    expect(answer.via).toMatchObject({ mx: 'mx.clear.test', mta_sts: 'enforce' });
    expect(clear.messages).toHaveLength(0);
  });
});

describe('a transaction that outlasts its deadline', () => {
  it('is ended at the deadline and deferred, saying so, however the server keeps the session open', async () => {
    const t = transport([], {}, { transactionTimeoutSeconds: 1 });
    // the route's idle timeout is 10 s: the answer names the 1 s deadline, not that
    const answer = (await t.send(message('reader@slowdot.test'))).recipients[0];
    expect(answer.accepted).toBe(false);
    expect(answer.responseCode).toBe(451);
    expect(answer.response).toMatch(/took longer than 1 s/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(slowDot.held).toBe(0); // the connection was closed
  });
});

describe('each step of a transaction has its own deadline (RFC 5321 §4.5.3.2, per route)', () => {
  // the idle timeout (10 s) and the whole transaction's (600 s) are far: only the step's can end these
  const phaseTimeouts = { mail: 1, rcpt: 1, data: 120, dataBlock: 180, dataDone: 1 };

  it('a server that never answers MAIL FROM, RCPT TO or the final dot is left at that step, saying which', async () => {
    const t = transport([], {}, { phaseTimeouts });
    const [mail, rcpt, dot] = await Promise.all(
      ['reader@stuckmail.test', 'reader@stuckrcpt.test', 'reader@slowdot.test'].map(
        async (to) => (await t.send(message(to))).recipients[0],
      ),
    );
    for (const answer of [mail, rcpt, dot]) {
      expect(answer.accepted).toBe(false);
      expect(answer.responseCode).toBe(451);
    }
    expect(mail.response).toMatch(/mx\.stuckmail\.test did not answer MAIL FROM within 1 s/);
    expect(rcpt.response).toMatch(/mx\.stuckrcpt\.test did not answer RCPT TO within 1 s/);
    expect(dot.response).toMatch(/mx\.slowdot\.test did not answer the end of the data within 1 s/);
  });

  it("takes the RFC's minimums by default, and a routes file may set each", () => {
    expect(RFC_PHASE_TIMEOUTS).toEqual({ mail: 300, rcpt: 300, data: 120, dataBlock: 180, dataDone: 600 });
    const routes = parseRoutes({
      routes: { mx: { type: 'direct', phase_timeouts: { rcpt: 60, data_done: 900 } } },
      rules: [{ match: {}, routes: ['mx'] }],
    });
    expect((routes.routes.get('mx') as DirectRoute).phaseTimeouts).toEqual({
      ...RFC_PHASE_TIMEOUTS,
      rcpt: 60,
      dataDone: 900,
    });
    expect(() =>
      parseRoutes({
        routes: { mx: { type: 'direct', phase_timeouts: { rcpt: 0, quit: 5 } } },
        rules: [{ match: {}, routes: ['mx'] }],
      }),
    ).toThrow(/routes\.mx\.phase_timeouts\.(rcpt|quit)/);
  });
});

describe('a domain none of whose MX hosts exists', () => {
  it('bounces (RFC 5321 §5.1), naming the hosts', async () => {
    const answer = (await transport().send(message('reader@ghost.test'))).recipients[0];
    expect(answer.accepted).toBe(false);
    expect(answer.responseCode).toBeGreaterThanOrEqual(500);
    expect(answer.response).toMatch(/mx1\.ghost\.test/);
    expect(answer.response).toMatch(/mx2\.ghost\.test/);
  });
});

describe('a rate refusal teaches the lane the site pace', () => {
  const limits = { maxConnections: 5, messagesPerConnection: 100, messagesPerHour: null };
  const dialing = { port: 25, timeoutMs: 10_000 };

  it('spreads what the site took in the last minute over a minute, and doubles the spacing if refused again', async () => {
    const lane = new Lane(limits, null, dialing, 60_000, 'site:test:paced:any');
    for (let i = 0; i < 20; i++) lane.taken();
    expect(lane.learnedIntervalMs).toBeNull();
    expect(lane.slowDown(Date.now(), '450 4.7.28 unusual rate of unsolicited mail')).toBe(true);
    // 20 a minute, kept 3 % under: a message every ~3.1 s
    expect(lane.learnedIntervalMs).toBeGreaterThan(3_000);
    expect(lane.learnedIntervalMs).toBeLessThan(3_200);
    // paced so: the next slot is one spacing after this one, held when it is further than asked to wait
    expect(await lane.paced(Date.now, 10_000)).toBe(true);
    const next = await lane.paced(Date.now, 1_000);
    expect(typeof next).toBe('number');
    expect((next as number) - Date.now()).toBeGreaterThan(2_000);
    // refused again after the hold: half the rate
    const learned = lane.learnedIntervalMs as number;
    expect(lane.slowDown(Date.now() + 61_000, '450 4.7.28 unusual rate of unsolicited mail')).toBe(true);
    expect(lane.learnedIntervalMs).toBe(learned * 2);
  });

  it('learns nothing from a refusal for too many connections (those are halved instead)', () => {
    const lane = new Lane(limits, null, dialing, 60_000, 'site:test:conns:any');
    for (let i = 0; i < 10; i++) lane.taken();
    lane.slowDown(Date.now(), '421 4.7.0 too many connections from your IP');
    expect(lane.learnedIntervalMs).toBeNull();
    expect(lane.cap).toBe(2);
  });
});

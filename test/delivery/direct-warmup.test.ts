import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { MxResolver } from '../../src/delivery/direct/mx.ts';
import { createDirectTransport } from '../../src/delivery/direct/transport.ts';
import type { OutboundMessage, Transport } from '../../src/delivery/transport.ts';
import { dayOf, moveClock, now, resetClock } from '../../src/domain/core/clock.ts';
import { sourceWarmup } from '../../src/domain/shaping/warmup-count.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { simRoute } from '../helpers/direct-transport.ts';
import { type SimInternet, type SimServer, startSimInternet } from '../helpers/sim-internet.ts';

/**
 * Warm-up plans of a direct route's source addresses (issue 33, item 1), on a simulated internet
 * and a real PostgreSQL (the counts every worker process shares): each address sends at most its
 * day's volume of marketing, the route using the other address while one is used up; what fits
 * nowhere is held until the next day; transactional mail leaves all the same and is counted; past
 * the plan's last day nothing is held. Days are moved on the service's calendar.
 */

let net: SimInternet;
let mx: SimServer;
let database: { url: string; drop(): Promise<void> };
let db: DatabaseHandle;
let route: Transport;

beforeAll(async () => {
  net = await startSimInternet();
  mx = await net.server('mx.warm.test', '127.0.0.41');
  net.mx('warm.test', [[10, 'mx.warm.test']]);
  database = await createTestDatabase();
  db = connectDatabase(database.url, 2);
  const today = dayOf(now());
  const direct = simRoute(net, {
    sourceAddresses: [
      { address: '127.0.0.1', ehlo: 'mta1.sender.test', warmup: { startedOn: today, schedule: [3, 5] } },
      { address: '127.0.0.2', ehlo: 'mta2.sender.test', warmup: { startedOn: today, schedule: [2, 4] } },
    ],
  });
  route = createDirectTransport(direct, {
    resolver: new MxResolver({ servers: [net.dns.address] }),
    warmup: sourceWarmup(db.db),
  });
}, 60_000);
afterAll(async () => {
  resetClock();
  await route?.close();
  await db?.close();
  await database?.drop();
  await net?.close();
});

let sequence = 0;
function message(stream: 'marketing' | 'transactional'): OutboundMessage {
  const n = ++sequence;
  const messageId = `<w${n}@sender.test>`;
  return {
    from: 'news@sender.test',
    to: [`reader${n}@warm.test`],
    messageId,
    attempt: 1,
    tags: { email: `e${n}`, project: 'p', stream },
    raw: Buffer.from(
      `From: news@sender.test\r\nTo: reader${n}@warm.test\r\nSubject: w${n}\r\nMessage-ID: ${messageId}\r\n\r\nHi\r\n`,
    ),
  };
}

/** Sends `count` messages one after another; answers how many left from each address, and how many were held. */
async function sendDay(count: number, stream: 'marketing' | 'transactional' = 'marketing') {
  const from: Record<string, number> = {};
  let held = 0;
  let heldUntil = 0;
  for (let i = 0; i < count; i++) {
    const [answer] = (await route.send(message(stream))).recipients;
    if (answer.accepted) {
      const source = answer.via?.source as string;
      from[source] = (from[source] ?? 0) + 1;
    } else {
      expect(answer.response).toMatch(
        /^451 4\.4\.5 held by Posthorn: the warm-up of .* allows no more marketing today/,
      );
      held++;
      heldUntil = answer.heldUntil as number;
    }
  }
  return { from, held, heldUntil };
}

describe("a direct route's source addresses warming up", () => {
  it('send at most their day, the rest held to the next; transactional mail leaves and counts', async () => {
    const first = await sendDay(8);
    expect(first.from).toEqual({ '127.0.0.1': 3, '127.0.0.2': 2 });
    expect(first.held).toBe(3);
    // held until the next day begins on the service's calendar
    const nextDay = Date.parse(`${dayOf(new Date(now().getTime() + 86_400_000))}T00:00:00Z`);
    expect(first.heldUntil - Date.now()).toBeLessThanOrEqual(nextDay - now().getTime() + 1_000);
    expect(first.heldUntil).toBeGreaterThan(Date.now());
    // transactional mail is never held: it leaves, and is counted
    const receipt = await sendDay(1, 'transactional');
    expect(receipt.held).toBe(0);
    const { used } = await db.db
      .selectFrom('warmup_source_usage')
      .select((eb) => eb.fn.sum<number>('used').as('used'))
      .where('day', '=', dayOf(now()))
      .executeTakeFirstOrThrow();
    expect(Number(used)).toBe(6);
    expect(mx.messages.length).toBe(6);

    moveClock(86_400_000);
    const second = await sendDay(10);
    expect(second.from).toEqual({ '127.0.0.1': 5, '127.0.0.2': 4 });
    expect(second.held).toBe(1);

    // past the plan's last day nothing is held
    moveClock(86_400_000);
    const third = await sendDay(12);
    expect(third.held).toBe(0);
    expect((third.from['127.0.0.1'] ?? 0) + (third.from['127.0.0.2'] ?? 0)).toBe(12);
  });
});

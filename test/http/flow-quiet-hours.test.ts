import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveClock, now, resetClock } from '../../src/domain/core/clock.ts';
import { localTime, nextLocal } from '../../src/domain/core/local-time.ts';
import { nudgeAdvance } from '../../src/domain/flows/engine.ts';
import { okCall } from '../helpers/assertions.ts';
import { FROM } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { flowWorkSettled } from '../helpers/flows.ts';
import { marketingAccount, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Quiet hours (issue 50, build item 4): a project quiet from 21:00 to 08:00 holds a flow's send
 * step reached at night in the contact's zone until 08:00 there, while a contact whose zone is in
 * daytime gets it at once and transactional mail to the sleeper leaves at once. The service's clock
 * (core/clock.ts) is moved to the morning as the warm-up test moves it a day.
 */

let server: TestServer;
let key: string;

const call = (method: string, path: string, body?: unknown) => okCall(server, key, method, path, body);

/** A fixed-offset zone whose wall clock reads `hour` o'clock now. */
function zoneAt(hour: number): string {
  let offset = (hour - new Date(now()).getUTCHours() + 24) % 24;
  if (offset > 14) offset -= 24;
  return offset === 0 ? 'Etc/GMT' : offset > 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`;
}

const received = (to: string) => server.sink.messages.filter((m) => m.to.includes(to));

beforeAll(async () => {
  server = await startTestServer();
  key = (await marketingAccount(server, 'Night Tests Ltd, 5 Lamp Lane, Bath BA1 1AA')).project_key.key;
}, 60_000);
afterAll(async () => {
  resetClock();
  await server?.close();
});

describe('quiet hours', () => {
  it('hold a flow send reached at night until 08:00 in the contact’s zone', async () => {
    await call('PATCH', '/v1/me/local-time', { quiet_hours: { from: '21:00', to: '08:00' } });
    const night = { email: 'sleeper@quiet.example', zone: zoneAt(2) };
    const day = { email: 'awake@quiet.example', zone: zoneAt(14) };
    for (const c of [night, day])
      await call('POST', '/v1/contacts', { email: c.email, properties: { timezone: c.zone } });
    const flow = await call('POST', '/v1/flows', {
      name: 'Welcome',
      trigger: { type: 'manual' },
      steps: [{ id: 'hello', type: 'send', from: FROM, subject: 'Hello', html: '<p>Hello</p>' }],
    });
    await call('POST', `/v1/flows/${flow.id}/activate`);
    for (const c of [night, day]) await call('POST', `/v1/flows/${flow.id}/enrollments`, { email: c.email });
    await flowWorkSettled(server);
    await eventually(() => received(day.email).length === 1, {
      timeoutMs: 20_000,
      message: 'the daytime send',
    });

    // the sleeper's enrollment waits at the send step for 08:00 in their zone, without a message
    const held = await server.runtime.ctx.db
      .selectFrom('flow_enrollments')
      .innerJoin('contacts', 'contacts.id', 'flow_enrollments.contact_id')
      .select(['flow_enrollments.id', 'status', 'step_id', 'wake_at', 'history'])
      .where('contacts.email', '=', night.email)
      .executeTakeFirstOrThrow();
    expect(held).toMatchObject({ status: 'active', step_id: 'hello' });
    expect(JSON.stringify(held.history)).toContain('"quiet_hours"');
    const morning = nextLocal(now().getTime(), night.zone, 8 * 60);
    expect(Math.abs((held.wake_at as Date).getTime() - morning)).toBeLessThan(60_000);
    expect(received(night.email)).toEqual([]);

    // transactional mail never waits
    await call('POST', '/v1/emails', { from: FROM, to: night.email, subject: 'Receipt', text: 'Thanks' });
    await eventually(() => received(night.email).length === 1, { timeoutMs: 20_000, message: 'the receipt' });

    // morning: the enrollment wakes (as its own wake-up would) and the message goes
    moveClock(morning + 1_000 - now().getTime());
    await sql`update flow_enrollments set wake_at = now() where id = ${held.id}`.execute(
      server.runtime.ctx.db,
    );
    await nudgeAdvance(server.runtime.ctx.db);
    await eventually(() => received(night.email).some((m) => m.parsed.subject === 'Hello'), {
      timeoutMs: 20_000,
      message: 'the morning send',
    });
    const t = localTime(night.zone, now().getTime());
    expect(t.hour).toBe(8);
  }, 120_000);
});

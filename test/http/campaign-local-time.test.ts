import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addJobs } from '../../src/db/enqueue.ts';
import { campaignJob } from '../../src/domain/campaigns/send.ts';
import { moveClock, now, resetClock } from '../../src/domain/core/clock.ts';
import { localTime, nextLocal } from '../../src/domain/core/local-time.ts';
import { okCall } from '../helpers/assertions.ts';
import { FROM, waitForCampaignStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { marketingAccount, startTestServer, type TestServer } from '../helpers/server.ts';
import { zoneAt } from '../helpers/zones.ts';

/**
 * A campaign at 09:00 in each recipient's time zone (issue 50, build item 4): contacts in five
 * zones (and one whose zone is no zone, which takes the project's) each get their message within
 * their own 09:00 minute, none before. The service's clock (core/clock.ts) is moved to each
 * recipient's time as the warm-up test moves it a day, and the writer woken as its own wake-up
 * would; the campaign's page shows who waits for which instant, and it is sent once all have gone.
 */

const ZONES = [
  'America/Los_Angeles',
  'America/New_York',
  'Europe/Berlin',
  'Asia/Kolkata',
  'Australia/Sydney',
];
const NINE = 9 * 60;
const PROJECT_ZONE = 'Pacific/Auckland';

let server: TestServer;
let key: string;

const call = (method: string, path: string, body?: unknown) => okCall(server, key, method, path, body);

beforeAll(async () => {
  server = await startTestServer();
  key = (await marketingAccount(server, 'Clock Tests Ltd, 4 Dial Street, York YO1 7HH')).project_key.key;
  await call('PATCH', '/v1/me/local-time', { time_zone: PROJECT_ZONE });
}, 60_000);
afterAll(async () => {
  resetClock();
  await server?.close();
});

/** The writer has run and parked itself for later (its job waits more than a few seconds). */
async function writerParked(campaignId: string) {
  await eventually(
    async () => {
      const { rows } = await sql<{ ms: number }>`
        select extract(epoch from run_at - now()) * 1000 as ms from graphile_worker.jobs
         where key = ${`campaign:${campaignId}`} and locked_at is null`.execute(server.runtime.ctx.db);
      return rows.length > 0 && Number(rows[0].ms) > 5_000;
    },
    { timeoutMs: 30_000, intervalMs: 100, message: 'the writer parked until the next local time' },
  );
}

const statusOf = async (campaignId: string) =>
  new Map(
    (
      await server.runtime.ctx.db
        .selectFrom('campaign_recipients')
        .select(['email', 'status'])
        .where('campaign_id', '=', campaignId)
        .execute()
    ).map((r) => [r.email, r.status]),
  );

describe('a campaign at local time', () => {
  it('delivers to each of five time zones within its own 09:00 minute', async () => {
    const contacts = [
      ...ZONES.map((zone, i) => ({ email: `tz${i}@local.example`, zone, given: zone })),
      // not a zone: the project's
      { email: 'nowhere@local.example', zone: PROJECT_ZONE, given: 'Mars/Olympus_Mons' },
    ];
    const list = await call('POST', '/v1/lists', { name: 'Everywhere' });
    for (const c of contacts)
      await call('POST', '/v1/contacts', { email: c.email, properties: { timezone: c.given } });
    await call('POST', `/v1/lists/${list.id}/contacts`, { emails: contacts.map((c) => c.email) });
    const campaign = await call('POST', '/v1/campaigns', {
      name: 'Morning news',
      from: FROM,
      subject: 'Good morning',
      html: '<p>Good morning</p>',
      list_ids: [list.id],
      local_time: '09:00',
    });
    expect(campaign.local_time).toBe('09:00');
    const before = now().getTime();
    await call('POST', `/v1/campaigns/${campaign.id}/send`);
    const after = now().getTime();

    // each recipient waits for the next 09:00 in their zone (the project's for a name that is none)
    const due = new Map(contacts.map((c) => [c.email, nextLocal(before, c.zone, NINE)]));
    const sendAfter = await server.runtime.ctx.db
      .selectFrom('campaign_recipients')
      .select(['email', 'send_after'])
      .where('campaign_id', '=', campaign.id)
      .execute();
    for (const r of sendAfter) {
      const at = (r.send_after as Date).getTime();
      const zone = contacts.find((c) => c.email === r.email)?.zone as string;
      expect([due.get(r.email), nextLocal(after, zone, NINE)], r.email).toContain(at);
      due.set(r.email, at);
    }
    await writerParked(campaign.id);
    const shown = await call('GET', `/v1/campaigns/${campaign.id}`);
    const instants = [...new Set(due.values())].sort((a, b) => a - b);
    expect(shown.waiting).toEqual(
      instants.map((at) => ({
        at: new Date(at).toISOString(),
        count: [...due.values()].filter((d) => d === at).length,
      })),
    );

    // pause and resume keep the waits
    expect((await call('POST', `/v1/campaigns/${campaign.id}/pause`)).status).toBe('paused');
    expect((await call('GET', `/v1/campaigns/${campaign.id}`)).waiting).toEqual(shown.waiting);
    expect((await call('POST', `/v1/campaigns/${campaign.id}/resume`)).status).toBe('sending');
    await writerParked(campaign.id);

    const sentAt = new Map<string, number>();
    for (const at of instants) {
      const mine = contacts.filter((c) => due.get(c.email) === at);
      // half a minute before: the writer, woken, takes nobody and parks again
      moveClock(at - 30_000 - now().getTime());
      await addJobs([campaignJob(campaign.id)]).execute(server.runtime.ctx.db);
      await writerParked(campaign.id);
      const early = await statusOf(campaign.id);
      for (const c of mine) expect(early.get(c.email), `${c.email} before 09:00`).toBe('pending');
      // the minute itself: their messages go
      moveClock(at + 1_000 - now().getTime());
      await addJobs([campaignJob(campaign.id)]).execute(server.runtime.ctx.db);
      await eventually(
        () => {
          for (const c of mine)
            if (!sentAt.has(c.email) && server.sink.messages.some((m) => m.to.includes(c.email)))
              sentAt.set(c.email, now().getTime());
          return mine.every((c) => sentAt.has(c.email));
        },
        { timeoutMs: 30_000, intervalMs: 50, message: `messages due ${new Date(at).toISOString()}` },
      );
    }
    for (const c of contacts) {
      const t = localTime(c.zone, sentAt.get(c.email) as number);
      expect({ email: c.email, local: [t.hour, t.minute] }).toEqual({ email: c.email, local: [9, 0] });
    }
    await waitForCampaignStatus(server, key, campaign.id, 'sent', 30_000);
    expect((await call('GET', `/v1/campaigns/${campaign.id}`)).waiting).toEqual([]);
  }, 240_000);

  it('holds a recipient whose send time falls in quiet hours until they end, in their zone', async () => {
    await call('PATCH', '/v1/me/local-time', { quiet_hours: { from: '21:00', to: '08:00' } });
    // fixed-offset zones whose wall clock reads 02:00 and 14:00 now
    const night = { email: 'sleeper@local.example', zone: zoneAt(2) };
    const day = { email: 'awake@local.example', zone: zoneAt(14) };
    const list = await call('POST', '/v1/lists', { name: 'Night and day' });
    for (const c of [night, day])
      await call('POST', '/v1/contacts', { email: c.email, properties: { timezone: c.zone } });
    await call('POST', `/v1/lists/${list.id}/contacts`, { emails: [night.email, day.email] });
    const campaign = await call('POST', '/v1/campaigns', {
      name: 'Whenever',
      from: FROM,
      subject: 'News',
      html: '<p>News</p>',
      list_ids: [list.id],
    });
    await call('POST', `/v1/campaigns/${campaign.id}/send`);
    const morning = nextLocal(now().getTime(), night.zone, 8 * 60);
    await eventually(() => server.sink.messages.some((m) => m.to.includes(day.email)), {
      timeoutMs: 30_000,
      message: 'the daytime recipient at once',
    });
    await writerParked(campaign.id);
    expect((await statusOf(campaign.id)).get(night.email)).toBe('pending');
    const shown = await call('GET', `/v1/campaigns/${campaign.id}`);
    expect(shown.status).toBe('sending');
    expect(shown.waiting).toHaveLength(1);
    expect(Math.abs(Date.parse(shown.waiting[0].at) - morning)).toBeLessThan(60_000);
    moveClock(Date.parse(shown.waiting[0].at) + 1_000 - now().getTime());
    await addJobs([campaignJob(campaign.id)]).execute(server.runtime.ctx.db);
    await waitForCampaignStatus(server, key, campaign.id, 'sent', 30_000);
    expect(server.sink.messages.some((m) => m.to.includes(night.email))).toBe(true);
    expect(localTime(night.zone, now().getTime()).hour).toBe(8);
  }, 120_000);
});

import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addJobs } from '../../src/db/enqueue.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { campaignJob } from '../../src/domain/campaigns/send.ts';
import { dayOf, moveClock, now, resetClock } from '../../src/domain/core/clock.ts';
import { openToken } from '../../src/domain/marketing/tokens.ts';
import { okCall } from '../helpers/assertions.ts';
import { insertVerifiedDomain, waitForAllStatus, waitForCampaignStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A 30-day warm-up plan (issue 33, item 1) over simulated days: the service's calendar is moved a
 * day at a time (core/clock.ts, the feedback simulator's clock), and each day the campaign writer
 * is woken as the next day's first run would wake it. Each day's mail from the domain is checked
 * against the plan's volume (within 5 %), transactional mail on some days is never held but takes
 * its share, and recipients go engaged first (opened a campaign before), then recent subscribers,
 * then the rest.
 */

const DOMAIN = 'warm.example';
const ADDRESS = 'Warm Tests Ltd, 2 Kiln Row, Stoke ST1 1AA';
const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
/** 30 days, growing from 10 to 212 a day: 2,521 messages. */
const SCHEDULE = [
  10, 12, 15, 18, 22, 26, 30, 35, 40, 45, 50, 55, 60, 66, 72, 78, 85, 92, 100, 108, 116, 125, 134, 144, 154,
  165, 176, 188, 200, 212,
];
const TOTAL = SCHEDULE.reduce((a, b) => a + b, 0);
const ENGAGED = 25;
const OLD = 1_000;
/** Days with transactional mail from the domain, and how much: it is sent, and counts. */
const TRANSACTIONAL: Record<number, number> = { 3: 4, 12: 9, 25: 20 };
const address = (i: number) => `delivered+w${i}@simulator.posthorn.test`;

let server: TestServer;
let key: string;
let projectId: string;
let domainId: string;

const call = (method: string, path: string, body?: unknown) => okCall(server, key, method, path, body);

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  projectId = account.project.id;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  await call('PATCH', '/v1/me/footer', { address: ADDRESS });
  domainId = (await insertVerifiedDomain(server, projectId, DOMAIN)).id;
}, 60_000);
afterAll(async () => {
  resetClock();
  await server?.close();
});

/** Each contact's warm-up class as the test made it: 0 engaged, 1 recent, 2 old. */
const classOf = new Map<string, number>();

async function makeAudience() {
  const everyone = (await call('POST', '/v1/lists', { name: 'Everyone' })).id as string;
  const engaged = (await call('POST', '/v1/lists', { name: 'Engaged' })).id as string;
  const emails = Array.from({ length: TOTAL }, (_, i) => address(i));
  for (let i = 0; i < emails.length; i += 1000)
    await call('POST', `/v1/lists/${everyone}/contacts`, { emails: emails.slice(i, i + 1000) });
  // the engaged are spread through the audience, so contact order alone would not put them first
  const engagedEmails = emails.filter((_, i) => i % 97 === 5).slice(0, ENGAGED);
  await call('POST', `/v1/lists/${engaged}/contacts`, { emails: engagedEmails });
  // an earlier campaign, before the plan, opened by the engaged (through the open pixel, by a person)
  const earlier = await call('POST', '/v1/campaigns', {
    name: 'Earlier news',
    from: `News <news@${DOMAIN}>`,
    subject: 'Earlier',
    html: '<p>Earlier</p>',
    list_ids: [engaged],
  });
  await call('POST', `/v1/campaigns/${earlier.id}/send`);
  await waitForCampaignStatus(server, key, earlier.id, 'sent', 60_000);
  const sent = await server.runtime.ctx.db
    .selectFrom('emails')
    .select('id')
    .where('campaign_id', '=', earlier.id)
    .execute();
  // it went out days ago (an open within seconds of sending is a link scanner's, not a person's)
  await server.runtime.ctx.db
    .updateTable('emails')
    .set({ sent_at: sql`now() - interval '10 days'` })
    .where('campaign_id', '=', earlier.id)
    .execute();
  for (const { id } of sent) {
    const res = await fetch(`${server.url}/t/o/${openToken(server.runtime.ctx, id)}`, {
      headers: { 'user-agent': CHROME },
    });
    expect(res.status).toBe(200);
  }
  // opens are recorded in the background (grouped): all of them before the plan starts
  await eventually(
    async () => {
      const { n } = await server.runtime.ctx.db
        .selectFrom('email_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('type', '=', 'opened')
        .where('project_id', '=', projectId)
        .where(sql<string>`detail->>'user_agent_class'`, '=', 'human')
        .executeTakeFirstOrThrow();
      expect(Number(n)).toBe(ENGAGED);
    },
    { timeoutMs: 30_000, message: 'the opens recorded' },
  );
  // most of the audience subscribed long ago; the rest recently
  const old = emails.filter((e) => !engagedEmails.includes(e)).slice(-OLD);
  await server.runtime.ctx.db
    .updateTable('contacts')
    .set({ created_at: sql`now() - interval '200 days'` })
    .where('project_id', '=', projectId)
    .where('email', 'in', old)
    .execute();
  for (const e of emails) classOf.set(e, engagedEmails.includes(e) ? 0 : old.includes(e) ? 2 : 1);
  return everyone;
}

const usedToday = async () =>
  (
    await server.runtime.ctx.db
      .selectFrom('warmup_usage')
      .select('used')
      .where('domain_id', '=', domainId)
      .where('day', '=', dayOf(now()))
      .executeTakeFirst()
  )?.used ?? 0;

const pendingOf = async (campaignId: string) =>
  Number(
    (
      await server.runtime.ctx.db
        .selectFrom('campaign_recipients')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('campaign_id', '=', campaignId)
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow()
    ).n,
  );

/** How long until the campaign's writer runs again (its job waits for the next day's volume). */
const writerWaitsMs = async (campaignId: string) => {
  const { rows } = await sql<{ ms: number }>`
    select extract(epoch from run_at - now()) * 1000 as ms from graphile_worker.jobs
     where key = ${`campaign:${campaignId}`} and locked_at is null`.execute(server.runtime.ctx.db);
  return rows[0] ? Number(rows[0].ms) : 0;
};

describe('a 30-day warm-up plan', () => {
  it('is followed within 5 % each simulated day, engaged contacts first, transactional mail counted', async () => {
    const list = await makeAudience();
    const domain = await call('PATCH', `/v1/domains/${domainId}`, { warmup: { schedule: SCHEDULE } });
    expect(domain.warmup).toMatchObject({
      day: 1,
      days: 30,
      today: { volume: 10, used: 0 },
      finished: false,
    });

    const campaign = await call('POST', '/v1/campaigns', {
      name: 'Warm news',
      from: `News <news@${DOMAIN}>`,
      subject: 'Hello',
      html: '<p>Hello</p>',
      list_ids: [list],
    });
    // before it starts, the campaign shows the days it is planned for
    const draft = await call('GET', `/v1/campaigns/${campaign.id}`);
    expect(draft.warmup.pending).toBe(TOTAL);
    expect(draft.warmup.planned_days.map((d: { messages: number }) => d.messages)).toEqual(SCHEDULE);
    expect(draft.warmup.after_plan).toBe(0);

    await call('POST', `/v1/campaigns/${campaign.id}/send`);
    const errors: number[] = [];
    const classesByDay: number[][] = [];
    const seen = new Set<string>();
    for (const [index, volume] of SCHEDULE.entries()) {
      const day = index + 1;
      if (day > 1) {
        moveClock(86_400_000);
        const transactional = TRANSACTIONAL[day] ?? 0;
        const ids: string[] = [];
        for (let i = 0; i < transactional; i++)
          ids.push(
            (
              await call('POST', '/v1/emails', {
                from: `Receipts <receipts@${DOMAIN}>`,
                to: `delivered+receipt${day}-${i}@simulator.posthorn.test`,
                subject: 'Your receipt',
                text: 'Thanks',
              })
            ).id,
          );
        // transactional mail is never held: handed over at once, and counted
        if (ids.length > 0) await waitForAllStatus(server, ids, 'delivered', `day ${day} receipts`);
        expect(await usedToday()).toBe(transactional);
        // the next day's first run of the writer
        await addJobs([campaignJob(campaign.id)]).execute(server.runtime.ctx.db);
      }
      await eventually(async () => (await usedToday()) >= volume || (await pendingOf(campaign.id)) === 0, {
        timeoutMs: 60_000,
        intervalMs: 100,
        message: `day ${day}: the writer's day`,
      });
      // the writer has parked until tomorrow (or finished): nothing more of it runs today
      if ((await pendingOf(campaign.id)) > 0)
        await eventually(async () => (await writerWaitsMs(campaign.id)) > 60_000, {
          timeoutMs: 60_000,
          intervalMs: 100,
          message: `day ${day}: the writer waiting for the next day`,
        });
      const used = await usedToday();
      errors.push(Math.abs(used - volume) / volume);
      const queued = await server.runtime.ctx.db
        .selectFrom('campaign_recipients')
        .select('email')
        .where('campaign_id', '=', campaign.id)
        .where('status', '!=', 'pending')
        .execute();
      const today = queued.map((r) => r.email).filter((e) => !seen.has(e));
      for (const e of today) seen.add(e);
      expect(today.length, `day ${day}: campaign messages`).toBe(volume - (TRANSACTIONAL[day] ?? 0));
      // within a day the order does not matter: across days it must
      classesByDay.push(today.map((e) => classOf.get(e) as number).sort((a, b) => a - b));
    }
    console.log(`warm-up test: error per day ${errors.map((e) => `${(e * 100).toFixed(1)}%`).join(' ')}`);
    for (const [i, error] of errors.entries()) expect(error, `day ${i + 1}`).toBeLessThanOrEqual(0.05);
    // engaged first, then recent subscribers, then the rest: the classes never go back
    const order = classesByDay.flat();
    expect(order.slice(0, ENGAGED)).toEqual(Array(ENGAGED).fill(0));
    for (let i = 1; i < order.length; i++) expect(order[i]).toBeGreaterThanOrEqual(order[i - 1]);
    // what the transactional mail took waits for the day after the plan, when nothing is capped
    const left = await pendingOf(campaign.id);
    expect(left).toBe(Object.values(TRANSACTIONAL).reduce((a, b) => a + b, 0));
    const shown = await call('GET', `/v1/campaigns/${campaign.id}`);
    expect(shown.warmup).toMatchObject({ day: 30, pending: left, planned_days: [], after_plan: left });
    moveClock(86_400_000);
    await addJobs([campaignJob(campaign.id)]).execute(server.runtime.ctx.db);
    await waitForCampaignStatus(server, key, campaign.id, 'sent', 60_000);
    expect((await call('GET', `/v1/domains/${domainId}`)).warmup).toMatchObject({ day: 31, finished: true });
  }, 300_000);
});

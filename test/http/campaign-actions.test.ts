import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { CAMPAIGN_BATCH } from '../../src/domain/campaigns/hold.ts';
import { expectError } from '../helpers/assertions.ts';
import {
  campaignMessages,
  insertVerifiedDomain,
  unfoldedHeaders,
  waitForCampaignStatus,
} from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

const ADDRESS = 'Posthorn Tests Ltd, 2 High Street, Leeds LS1 1AA';
const FROM = 'news@letters.example';
const BIG = 1_500;

let server: TestServer;
let account: SignupResult;
let key: string;
let few: string;
let big: string;
let readers: string[];
let many: string[];

const campaign = (extra: Record<string, unknown> = {}) => ({
  name: 'Spring news',
  from: FROM,
  subject: 'Spring is here, {{ contact.first_name | default: "friend" }}',
  html: '<html><body><p>Hello {{ contact.first_name | default: "friend" }}</p><p><a href="https://shop.example.com/sale">Sale</a></p></body></html>',
  list_ids: [few],
  ...extra,
});

async function createCampaign(body: Record<string, unknown>): Promise<string> {
  const res = await server.call('POST', '/v1/campaigns', { key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const act = (id: string, action: string, body?: unknown) =>
  server.call('POST', `/v1/campaigns/${id}/${action}`, { key, body });
const get = async (id: string) => (await server.call('GET', `/v1/campaigns/${id}`, { key })).body;
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
/** The sink's messages of one campaign (Feedback-ID names it). */
const messagesOf = (campaignId: string) => campaignMessages(server.sink.messages, campaignId);

/** How many of the campaign's emails are in each status. */
async function emailStatuses(campaignId: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: number }>`
    select status, count(*)::int as n from emails where campaign_id = ${campaignId} group by status`.execute(
    server.runtime.ctx.db,
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function recipientStatuses(campaignId: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: number }>`
    select status, count(*)::int as n from campaign_recipients where campaign_id = ${campaignId} group by status`.execute(
    server.runtime.ctx.db,
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function startJobs(campaignId: string) {
  const { rows } = await sql<{ run_at: Date }>`
    select run_at from graphile_worker.jobs where key = ${`campaign-start:${campaignId}`}`.execute(
    server.runtime.ctx.db,
  );
  return rows;
}

/**
 * Waits until the worker has run every job of the campaign (start, send batches, finish check,
 * A/B winner): what would still write or send its mail has been given its chance.
 */
async function jobsDone(campaignId: string) {
  await eventually(
    async () => {
      // each of them has a job key ending in the campaign's id (campaign:, campaign-finish:, …)
      const { rows } = await sql<{ key: string; run_at: Date }>`
        select key, run_at from graphile_worker.jobs where key like ${`campaign%:${campaignId}`}`.execute(
        server.runtime.ctx.db,
      );
      expect(rows).toEqual([]);
    },
    { timeoutMs: 60_000, intervalMs: 100, message: `campaign ${campaignId}'s jobs still queued` },
  );
}

/** Waits until none of the campaign's emails is still on its way (queued or being handed over). */
async function settled(campaignId: string) {
  return eventually(
    async () => {
      const s = await emailStatuses(campaignId);
      expect(s.queued ?? 0).toBe(0);
      expect(s.sending ?? 0).toBe(0);
      return s;
    },
    { timeoutMs: 60_000, intervalMs: 100, message: 'emails still on their way' },
  );
}

async function usageSent(): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select coalesce(sum(sent), 0)::int as n from sending_usage where project_id = ${account.project.id}`.execute(
    server.runtime.ctx.db,
  );
  return rows[0].n;
}

beforeAll(async () => {
  server = await startTestServer();
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  expect((await server.call('PATCH', '/v1/me/footer', { key, body: { address: ADDRESS } })).status).toBe(200);
  await insertVerifiedDomain(server, account.project.id, 'letters.example');
  few = (await server.call('POST', '/v1/lists', { key, body: { name: 'Few' } })).body.id;
  readers = ['ada', 'grace', 'edsger'].map((n) => `${n}@readers.example`);
  for (const email of readers) {
    const res = await server.call('POST', '/v1/contacts', {
      key,
      body: { email, first_name: email.slice(0, 3) },
    });
    expect(res.status).toBe(200);
  }
  expect(
    (await server.call('POST', `/v1/lists/${few}/contacts`, { key, body: { emails: readers } })).status,
  ).toBe(200);
  big = (await server.call('POST', '/v1/lists', { key, body: { name: 'Big' } })).body.id;
  many = Array.from({ length: BIG }, (_, i) => `reader${i}@many.example`);
  for (const emails of [many.slice(0, 1_000), many.slice(1_000)]) {
    const added = await server.call('POST', `/v1/lists/${big}/contacts`, { key, body: { emails } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
  }
}, 60_000);
afterAll(() => server?.close());

describe('scheduling a campaign', () => {
  it('starts on its own at the time, with the edits made while scheduled, and mail reaches the sink', async () => {
    const id = await createCampaign(campaign({ name: 'Scheduled' }));
    const at = inSeconds(2);
    const res = await act(id, 'schedule', { scheduled_at: at });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // the whole campaign, as GET /campaigns/{id} shows it
    expect(res.body).toEqual(await get(id));
    expect(res.body).toMatchObject({
      id,
      object: 'campaign',
      status: 'scheduled',
      scheduled_at: at,
      from: FROM,
    });
    // a scheduled campaign can still be edited
    const edited = await server.call('PATCH', `/v1/campaigns/${id}`, {
      key,
      body: { subject: 'Scheduled for you, {{ contact.first_name }}' },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body.status).toBe('scheduled');

    const done = await waitForCampaignStatus(server, key, id, 'sent');
    expect(done.recipient_count).toBe(readers.length);
    const messages = messagesOf(id);
    expect(messages.flatMap((m) => m.to).sort()).toEqual([...readers].sort());
    for (const m of messages) expect(m.parsed.subject).toBe(`Scheduled for you, ${m.to[0].slice(0, 3)}`);
    expect(await startJobs(id)).toHaveLength(0);
  });

  it('refuses a time in the past, too far ahead or without a time zone with 400', async () => {
    const id = await createCampaign(campaign({ name: 'Bad times' }));
    expectError(await act(id, 'schedule', { scheduled_at: inSeconds(-60) }), 400, /must be in the future/);
    expectError(await act(id, 'schedule', { scheduled_at: inSeconds(400 * 86_400) }), 400, /one year/);
    expectError(await act(id, 'schedule', { scheduled_at: '2099-01-01T09:00:00' }), 400, /time zone/);
    expectError(await act(id, 'schedule', { scheduled_at: 'tomorrow' }), 400, /ISO 8601/);
    expectError(await act(id, 'schedule', {}), 400, /scheduled_at/);
    expect((await get(id)).status).toBe('draft');
    expect(await startJobs(id)).toHaveLength(0);
  });

  it('runs the send checks when scheduling: an empty audience is 400 and nothing is scheduled', async () => {
    const empty = (await server.call('POST', '/v1/lists', { key, body: { name: 'Empty' } })).body.id;
    const id = await createCampaign(campaign({ name: 'Nobody', list_ids: [empty] }));
    expectError(await act(id, 'schedule', { scheduled_at: inSeconds(3600) }), 400, /no recipients/);
    expect((await get(id)).status).toBe('draft');
    expect(await startJobs(id)).toHaveLength(0);
  });

  it('a reschedule replaces the start job: one job, at the new time', async () => {
    const id = await createCampaign(campaign({ name: 'Moved' }));
    const later = inSeconds(3600);
    expect((await act(id, 'schedule', { scheduled_at: later })).status).toBe(200);
    let jobs = await startJobs(id);
    expect(jobs.map((j) => j.run_at.toISOString())).toEqual([later]);

    const soon = inSeconds(2);
    const res = await act(id, 'schedule', { scheduled_at: soon });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.scheduled_at).toBe(soon);
    jobs = await startJobs(id);
    expect(jobs.map((j) => j.run_at.toISOString())).toEqual([soon]);
    await waitForCampaignStatus(server, key, id, 'sent');
    expect(messagesOf(id)).toHaveLength(readers.length);
  });

  it('a scheduled campaign sent now starts at once and is not started again at its time', async () => {
    const id = await createCampaign(campaign({ name: 'Early' }));
    expect((await act(id, 'schedule', { scheduled_at: inSeconds(3600) })).status).toBe(200);
    const res = await act(id, 'send');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('sending');
    expect(await startJobs(id)).toHaveLength(0);
    await waitForCampaignStatus(server, key, id, 'sent');
    expect(messagesOf(id)).toHaveLength(readers.length);
  });

  it('a scheduled campaign cancelled before its time sends nothing when the time passes', async () => {
    const id = await createCampaign(campaign({ name: 'Called off' }));
    expect((await act(id, 'schedule', { scheduled_at: inSeconds(2) })).status).toBe(200);
    const res = await act(id, 'cancel');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('cancelled');
    expect(await startJobs(id)).toHaveLength(0);
    // a campaign scheduled for a moment later is started and sent: the time has passed and the
    // worker has run what was due by then
    const control = await createCampaign(campaign({ name: 'Goes ahead' }));
    expect((await act(control, 'schedule', { scheduled_at: inSeconds(2) })).status).toBe(200);
    await waitForCampaignStatus(server, key, control, 'sent');
    expect((await get(id)).status).toBe('cancelled');
    expect(await emailStatuses(id)).toEqual({});
    expect(messagesOf(id)).toHaveLength(0);
    expectError(await act(id, 'schedule', { scheduled_at: inSeconds(60) }), 409, /cancelled/);
  });

  it('fails a scheduled campaign whose checks no longer pass at its time, with the reason', async () => {
    const lonely = (await server.call('POST', '/v1/lists', { key, body: { name: 'Lonely' } })).body.id;
    const contact = await server.call('POST', '/v1/contacts', {
      key,
      body: { email: 'solo@readers.example' },
    });
    await server.call('POST', `/v1/lists/${lonely}/contacts`, {
      key,
      body: { emails: ['solo@readers.example'] },
    });
    const id = await createCampaign(campaign({ name: 'Vanished', list_ids: [lonely] }));
    expect((await act(id, 'schedule', { scheduled_at: inSeconds(2) })).status).toBe(200);
    expect((await server.call('DELETE', `/v1/contacts/${contact.body.id}`, { key })).status).toBe(204);
    await waitForCampaignStatus(server, key, id, 'failed');
    const row = await server.runtime.ctx.db
      .selectFrom('campaigns')
      .select('failure_reason')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.failure_reason).toMatch(/no recipients/);
    expect(await emailStatuses(id)).toEqual({});
  });
});

describe('pausing, resuming and cancelling while sending', () => {
  it('pause stops the mail; resume sends the rest of the original audience, each exactly once', async () => {
    server.sink.delayMs = 20;
    try {
      const id = await createCampaign(campaign({ name: 'Paused', list_ids: [big] }));
      const started = await act(id, 'send');
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      await eventually(() => messagesOf(id).length >= 50, { timeoutMs: 30_000 });
      expectError(await act(id, 'schedule', { scheduled_at: inSeconds(60) }), 409, /is sending/);
      const paused = await act(id, 'pause');
      expect(paused.status, JSON.stringify(paused.body)).toBe(200);
      expect(paused.body).toMatchObject({ status: 'paused', recipient_count: BIG });
      const sum = (s: Record<string, number>) => Object.values(s).reduce((a, b) => a + b, 0);
      const writtenAtPause = sum(await emailStatuses(id));
      // what delivery had already claimed finishes; nothing else is written or leaves (at most
      // the one batch whose job read the status just before the pause)
      const statuses = await settled(id);
      const written = sum(statuses);
      expect(written - writtenAtPause).toBeLessThanOrEqual(CAMPAIGN_BATCH);
      const arrived = messagesOf(id).length;
      expect(arrived).toBe(statuses.sent ?? 0);
      expect(arrived).toBeLessThan(BIG);
      const pending = (await recipientStatuses(id)).pending;
      expect(pending).toBe(BIG - written);
      await jobsDone(id);
      expect(messagesOf(id)).toHaveLength(arrived);
      expect((await recipientStatuses(id)).pending).toBe(pending);
      expect((await get(id)).status).toBe('paused');

      expectError(await act(id, 'send'), 409, /\/resume/);
      expectError(await act(id, 'pause'), 409, /paused: only a sending campaign can be paused/);

      // a contact who joins the list now is not in the audience taken at the start
      const late = await server.call('POST', `/v1/lists/${big}/contacts`, {
        key,
        body: { emails: ['latecomer@many.example'] },
      });
      expect(late.status).toBe(200);
      const resumed = await act(id, 'resume');
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      expect(resumed.body).toMatchObject({ status: 'sending', recipient_count: BIG });
      expectError(await act(id, 'resume'), 409, /only a paused campaign can be resumed/);

      const done = await waitForCampaignStatus(server, key, id, 'sent', 90_000);
      expect(done.recipient_count).toBe(BIG);
      const received = messagesOf(id).flatMap((m) => m.to);
      expect(received).toHaveLength(BIG);
      expect(new Set(received)).toEqual(new Set(many));
    } finally {
      server.sink.delayMs = 0;
    }
  }, 120_000);

  it('usage counts each message once across a pause', async () => {
    // the previous campaign's pause took back emails and returned their usage; the resume counted
    // them again: the project's usage is the number of its emails
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from emails where project_id = ${account.project.id}`.execute(
      server.runtime.ctx.db,
    );
    expect(await usageSent()).toBe(rows[0].n);
  });

  it('pause takes back the messages not yet handed over, with their usage; cancel then ends it', async () => {
    // one batch: every recipient is written at once, so no batch is in flight at the pause
    const medium = (await server.call('POST', '/v1/lists', { key, body: { name: 'Medium' } })).body.id;
    const added = await server.call('POST', `/v1/lists/${medium}/contacts`, {
      key,
      body: { emails: many.slice(0, 400) },
    });
    expect(added.status).toBe(200);
    server.sink.delayMs = 50;
    try {
      const id = await createCampaign(campaign({ name: 'Held', list_ids: [medium] }));
      const started = await act(id, 'send');
      expect(started.status).toBe(200);
      const total = started.body.recipient_count;
      // delivery claims at most 4 jobs of 50 at a time: most messages are still queued
      await eventually(async () => (await recipientStatuses(id)).pending === undefined, {
        timeoutMs: 30_000,
      });
      const usageBefore = await usageSent();
      expect((await act(id, 'pause')).status).toBe(200);
      const atPause = await emailStatuses(id);
      expect(atPause.queued).toBeUndefined();
      const kept = Object.values(atPause).reduce((a, b) => a + b, 0);
      const pending = (await recipientStatuses(id)).pending;
      expect(pending).toBeGreaterThan(0);
      expect(kept + pending).toBe(total);
      expect(await usageSent()).toBe(usageBefore - pending);

      await settled(id);
      const cancelled = await act(id, 'cancel');
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
      expect(cancelled.body.status).toBe('cancelled');
      expect(await recipientStatuses(id)).toEqual({ queued: kept, cancelled: pending });
      await jobsDone(id);
      expect(messagesOf(id)).toHaveLength(kept);
    } finally {
      server.sink.delayMs = 0;
    }
  }, 120_000);

  it('cancel mid-send: what left stays sent, the rest is cancelled and never leaves', async () => {
    server.sink.delayMs = 20;
    try {
      const id = await createCampaign(campaign({ name: 'Stopped', list_ids: [big] }));
      const started = await act(id, 'send');
      expect(started.status).toBe(200);
      const total = started.body.recipient_count;
      await eventually(() => messagesOf(id).length >= 50, { timeoutMs: 30_000 });
      const res = await act(id, 'cancel');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.status).toBe('cancelled');

      const statuses = await settled(id);
      const arrived = messagesOf(id).length;
      expect(arrived).toBe(statuses.sent ?? 0);
      expect(arrived).toBeLessThan(total);
      const recipients = await recipientStatuses(id);
      expect(recipients.pending ?? 0).toBe(0);
      expect(recipients.cancelled).toBeGreaterThan(0);
      // each recipient is either one message that left or cancelled
      expect((recipients.queued ?? 0) + recipients.cancelled).toBe(total);
      expect(recipients.queued ?? 0).toBe(arrived);
      // the emails stopped record why
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from email_events ev join emails e on e.id = ev.email_id
         where e.campaign_id = ${id} and ev.type = 'cancelled'`.execute(server.runtime.ctx.db);
      expect(rows[0].n).toBe(statuses.cancelled ?? 0);

      await jobsDone(id);
      expect(messagesOf(id)).toHaveLength(arrived);
      const after = await get(id);
      expect(after.status).toBe('cancelled');
      expect(after.finished_at).toBeNull();
      expectError(await act(id, 'cancel'), 409, /cancelled: only a draft, scheduled, sending or paused/);
      expectError(await act(id, 'send'), 409);
      expectError(await act(id, 'resume'), 409);
    } finally {
      server.sink.delayMs = 0;
    }
  }, 120_000);

  it('refuses pause, resume and cancel on campaigns not in the right state', async () => {
    const id = await createCampaign(campaign({ name: 'Idle' }));
    expectError(await act(id, 'pause'), 409, /draft: only a sending campaign can be paused/);
    expectError(await act(id, 'resume'), 409, /draft: only a paused campaign can be resumed/);
    expect((await act(id, 'send')).status).toBe(200);
    await waitForCampaignStatus(server, key, id, 'sent');
    expectError(await act(id, 'cancel'), 409, /sent: only/);
    expectError(
      await act(id, 'schedule', { scheduled_at: inSeconds(60) }),
      409,
      /sent: only a draft or scheduled/,
    );
    expectError(await act('00000000-0000-4000-8000-000000000000', 'pause'), 404);
  });
});

describe('test sends', () => {
  const draftId = () => createCampaign(campaign({ name: 'Tested', list_ids: [big] }));

  it('sends to a member a [Test] message with footer and List-Unsubscribe, outside the campaign', async () => {
    const id = await draftId();
    const before = await usageSent();
    const owner = account.account.email;
    const res = await act(id, 'test', { to: [owner.toUpperCase()] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      object: 'campaign_test',
      sent: [{ to: owner.toUpperCase(), email_id: expect.any(String) }],
    });
    const message = await server.sink.waitFor(
      (m) => m.to[0].toLowerCase() === owner && m.parsed.subject?.startsWith('[Test]') === true,
    );
    // no contact has this address: Liquid sees the bare address, the link goes to the test page
    expect(message.parsed.subject).toBe('[Test] Spring is here, friend');
    expect(message.parsed.html).toContain('2 High Street, Leeds LS1 1AA');
    expect(message.parsed.text).toContain('2 High Street, Leeds LS1 1AA');
    expect(message.parsed.headers.get('x-posthorn-stream')).toBe('marketing');
    expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe: <http:\/\/[^>]+\/u\/test>/m);
    expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    expect(unfoldedHeaders(message.raw)).toMatch(/^X-Posthorn-Test: campaign$/m);
    const page = await fetch(`${server.url}/u/test`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('test of a campaign');

    // not in the campaign: no recipients, no stats, no campaign id; counted in usage
    expect(await recipientStatuses(id)).toEqual({});
    const email = await server.runtime.ctx.db
      .selectFrom('emails')
      .select(['campaign_id', 'stream'])
      .where('id', '=', res.body.sent[0].email_id)
      .executeTakeFirstOrThrow();
    expect(email).toEqual({ campaign_id: null, stream: 'marketing' });
    expect(await usageSent()).toBe(before + 1);
    const after = await get(id);
    expect(after).toMatchObject({ status: 'draft', recipient_count: null, started_at: null });
  });

  it("uses the member's contact when the project has one: its fields and its own unsubscribe link", async () => {
    const owner = account.account.email;
    expect(
      (await server.call('POST', '/v1/contacts', { key, body: { email: owner, first_name: 'Olive' } }))
        .status,
    ).toBe(200);
    const id = await draftId();
    const res = await act(id, 'test', { to: [owner] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const message = await server.sink.waitFor(
      (m) => m.to[0] === owner && m.parsed.subject === '[Test] Spring is here, Olive',
    );
    expect(message.parsed.html).toContain('Hello Olive');
    expect(unfoldedHeaders(message.raw)).toMatch(/^List-Unsubscribe: <http:\/\/[^>]+\/u\/[\w-]{20,}>/m);
  });

  it('refuses an address that is not a member with 400 naming it, and sends nothing', async () => {
    const id = await draftId();
    const count = server.sink.messages.length;
    expectError(
      await act(id, 'test', { to: [account.account.email, 'stranger@else.example'] }),
      400,
      /"stranger@else\.example" is not a member of this project: tests go only to the account email addresses of the project's members/,
    );
    expectError(await act(id, 'test', { to: [] }), 400);
    expectError(await act(id, 'test', { to: Array.from({ length: 6 }, () => account.account.email) }), 400);
    expectError(await act(id, 'test', {}), 400);
    // a test send accepted after the refused ones arrives: anything they had queued was due before it
    expect((await act(id, 'test', { to: [account.account.email] })).status).toBe(200);
    await eventually(() => server.sink.messages.length > count, { timeoutMs: 30_000 });
    expect(server.sink.messages.slice(count).map((m) => m.to)).toEqual([[account.account.email]]);
  });

  it('is refused for a cancelled campaign', async () => {
    const id = await draftId();
    expect((await act(id, 'cancel')).status).toBe(200);
    expectError(await act(id, 'test', { to: [account.account.email] }), 409, /cancelled/);
  });
});

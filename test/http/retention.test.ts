import { type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { getEmail } from '../../src/domain/emails/read.ts';
import { type PruneResult, pruneExpiredData } from '../../src/domain/maintenance/retention.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Retention with the clock moved: rows past their period go, a few per statement, and newer ones
 * stay; an email keeps its metadata and events when its bodies go, and still reads.
 */

let server: TestServer;
let account: SignupResult;
let key: string;
let projectId: string;
let webhookId: string;
const DAY = 86_400_000;

beforeAll(async () => {
  server = await startTestServer({ POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1' });
  account = await server.signupConfirmed();
  key = account.project_key.key;
  projectId = account.project.id;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  const hook = await server.call('POST', '/v1/webhooks', {
    key,
    body: { url: 'http://127.0.0.1:9/hooks', events: ['contact.deleted'] },
  });
  expect(hook.status).toBe(200);
  webhookId = hook.body.id;
});
afterAll(() => server?.close());

const db = () => server.runtime.ctx.db;
const periods = () => server.runtime.ctx.config.retention;

async function count(query: RawBuilder<{ n: number }>): Promise<number> {
  return (await query.execute(db())).rows[0].n;
}

/** Sends a message with HTML, text, a tag and an attachment (with an Idempotency-Key) and waits until sent. */
async function sendWithBodies(label: string, extra: Record<string, unknown> = {}) {
  const res = await server.call('POST', '/v1/emails', {
    key,
    headers: { 'idempotency-key': `retention-${label}` },
    body: {
      from: FROM,
      to: `${label}@example.org`,
      subject: `Retention ${label}`,
      html: `<p>HTML of ${label}</p>`,
      text: `Text of ${label}`,
      tags: [{ name: 'kind', value: label }],
      attachments: [
        { filename: 'note.txt', content: Buffer.from(`attachment of ${label}`).toString('base64') },
      ],
      ...extra,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}

async function templateEmail(): Promise<string> {
  const created = await server.call('POST', '/v1/templates', {
    key,
    body: {
      name: 'Retention',
      subject: 'Hello {{ name }}',
      html: '<p>Hello {{ name }}</p>',
      variables: [{ name: 'name', type: 'string' }],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  expect((await server.call('POST', `/v1/templates/${created.body.id}/publish`, { key })).status).toBe(200);
  const sent = await server.call('POST', '/v1/emails', {
    key,
    body: {
      from: FROM,
      to: 'templated@example.org',
      template: { id: created.body.id, variables: { name: 'Ada' } },
    },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return sent.body.id;
}

/** Webhook attempts and received messages, written as the program writes them, `daysAgo` old. */
async function insertAttempts(daysAgo: number, statuses: string[]) {
  for (const status of statuses)
    await sql`insert into webhook_deliveries (endpoint_id, project_id, message_id, event_type, payload, status, created_at)
              values (${webhookId}, ${projectId}, ${`msg_${Math.random()}`}, 'contact.deleted', '{}', ${status},
                      now() - make_interval(days => ${daysAgo}))`.execute(db());
}
const raw = (subject: string) => Buffer.from(`Subject: ${subject}\r\n\r\nbody`);
async function insertInbound(daysAgo: number, subjects: string[]) {
  for (const subject of subjects)
    await sql`insert into inbound_messages (project_id, rcpt_to, subject, text_body, size_bytes, raw, created_at)
              values (${projectId}, ${['in@example.org']}, ${subject}, ${`body of ${subject}`}, 20,
                      ${raw(subject)}, now() - make_interval(days => ${daysAgo}))`.execute(db());
}

/** Providers' feedback notifications as the SNS route records them, `daysAgo` old. */
async function insertFeedback(daysAgo: number, ids: string[]) {
  for (const id of ids)
    await sql`insert into provider_feedback (provider, notification_id, type, kind, outcome, project_id, detail, created_at)
              values ('ses', ${id}, 'Notification', 'Delivery', 'unmatched', ${projectId}, '{}',
                      now() - make_interval(days => ${daysAgo}))`.execute(db());
}

const byKind = (results: PruneResult[]) => Object.fromEntries(results.map((r) => [r.kind, r]));

describe('retention', () => {
  let oldIds: string[];
  let recentId: string;
  let scheduledId: string;
  let templatedId: string;
  let eventsBefore: number;

  it('prunes in batches what is older than its period and keeps what is newer', async () => {
    oldIds = [await sendWithBodies('old-1'), await sendWithBodies('old-2'), await sendWithBodies('old-3')];
    templatedId = await templateEmail();
    scheduledId = await sendWithBodies('scheduled', {
      scheduled_at: new Date(Date.now() + DAY).toISOString(),
    });
    for (const id of [...oldIds, templatedId]) await waitForStatus(server, key, id, 'sent');
    for (let i = 0; i < 3; i++)
      expect((await server.call('GET', '/v1/workspaces', { key: account.account_key.key })).status).toBe(200);
    // the request logs are written in batches: wait for them, then age every row so far
    await eventually(
      async () => (await count(sql`select count(*)::int as n from account_request_logs`)) >= 3,
    );
    await eventually(async () => (await count(sql`select count(*)::int as n from request_logs`)) >= 10);
    await server.runtime.ctx.pool.query(
      `update request_logs set created_at = created_at - interval '40 days'`,
    );
    await server.runtime.ctx.pool.query(
      `update account_request_logs set created_at = created_at - interval '40 days'`,
    );
    // (a batch written after the update is recent: only what was aged counts as old)
    const aged = (table: string) =>
      count(
        sql`select count(*)::int as n from ${sql.table(table)} where created_at < now() - interval '30 days'`,
      );
    const oldLogs = await aged('request_logs');
    const oldAccountLogs = await aged('account_request_logs');
    await sql`update emails set created_at = created_at - interval '40 days'
               where id = any(${[...oldIds, templatedId, scheduledId]}::uuid[])`.execute(db());
    await sql`update idempotency_keys set created_at = created_at - interval '2 days'
               where key = any(${oldIds.map((_id, i) => `retention-old-${i + 1}`)})`.execute(db());
    await insertAttempts(40, ['succeeded', 'failed', 'succeeded', 'pending']);
    await insertAttempts(10, ['succeeded']);
    await insertInbound(40, ['old-a', 'old-b', 'old-c']);
    await insertInbound(10, ['recent-inbound']);
    await insertFeedback(40, ['sns-old-1', 'sns-old-2', 'sns-old-3']);
    await insertFeedback(10, ['sns-recent']);
    // and what is recent: an email, request logs
    recentId = await sendWithBodies('recent');
    await waitForStatus(server, key, recentId, 'sent');
    await eventually(async () => (await count(sql`select count(*)::int as n from request_logs`)) > oldLogs);
    expect(oldLogs).toBeGreaterThanOrEqual(10);
    expect(oldAccountLogs).toBeGreaterThanOrEqual(3);
    eventsBefore = await count(sql`select count(*)::int as n from email_events`);

    const results = byKind(await pruneExpiredData(db(), periods(), { batchSize: 2 }));
    expect(results.request_logs.pruned).toBe(oldLogs);
    expect(results.account_request_logs.pruned).toBe(oldAccountLogs);
    expect(results.webhook_attempts.pruned).toBe(3);
    expect(results.idempotency_keys.pruned).toBe(3);
    expect(results.message_bodies.pruned).toBe(4);
    expect(results.inbound_raw.pruned).toBe(3);
    expect(results.provider_feedback.pruned).toBe(3);
    // two rows a statement: a statement per full batch, and the one that found fewer than two
    for (const r of Object.values(results)) {
      expect(r.statements, r.kind).toBe(Math.floor(r.pruned / 2) + 1);
      expect(r.finished, r.kind).toBe(true);
    }

    // what stays
    expect(
      await count(
        sql`select count(*)::int as n from request_logs where created_at < now() - interval '30 days'`,
      ),
    ).toBe(0);
    expect(await count(sql`select count(*)::int as n from request_logs`)).toBeGreaterThan(0);
    expect(await aged('account_request_logs')).toBe(0);
    const attempts = await sql<{
      status: string;
    }>`select status from webhook_deliveries order by created_at`.execute(db());
    expect(attempts.rows.map((r) => r.status)).toEqual(['pending', 'succeeded']);
    expect(await count(sql`select count(*)::int as n from idempotency_keys`)).toBe(2); // recent + scheduled
    const feedback = await sql<{ notification_id: string }>`
      select notification_id from provider_feedback order by notification_id`.execute(db());
    expect(feedback.rows.map((r) => r.notification_id)).toEqual(['sns-recent']);
    const inbound = await sql<{ subject: string; size: number; pruned: boolean; text_body: string }>`
      select subject, length(raw) as size, raw_pruned_at is not null as pruned, text_body
        from inbound_messages order by subject`.execute(db());
    expect(inbound.rows).toEqual([
      { subject: 'old-a', size: 0, pruned: true, text_body: 'body of old-a' },
      { subject: 'old-b', size: 0, pruned: true, text_body: 'body of old-b' },
      { subject: 'old-c', size: 0, pruned: true, text_body: 'body of old-c' },
      {
        subject: 'recent-inbound',
        size: raw('recent-inbound').length,
        pruned: false,
        text_body: 'body of recent-inbound',
      },
    ]);
    // the raw source of a pruned message is refused with the reason
    const ids = await sql<{ id: string; subject: string }>`
      select id, subject from inbound_messages where subject in ('old-a', 'recent-inbound')`.execute(db());
    const idOf = (subject: string) => ids.rows.find((r) => r.subject === subject)?.id as string;
    const pruned = await server.call('GET', `/v1/inbound/${idOf('old-a')}/raw`, { key });
    expect(pruned.status).toBe(409);
    expect(pruned.body.error).toMatch(/POSTHORN_RETENTION_INBOUND_RAW_DAYS/);
    const kept = await server.call('GET', `/v1/inbound/${idOf('recent-inbound')}/raw`, { key });
    expect(kept.status).toBe(200);
  });

  it('an email past the period keeps its metadata and events and still reads, with its bodies null', async () => {
    const rows = await db()
      .selectFrom('emails')
      .selectAll()
      .where('id', 'in', [...oldIds, templatedId])
      .execute();
    for (const row of rows) {
      expect(row.html).toBeNull();
      expect(row.text_body).toBeNull();
      expect(row.template_data).toBeNull();
      expect(row.body_pruned_at).toBeInstanceOf(Date);
      expect(row.status).toBe('sent');
      expect(row.to_addresses).toHaveLength(1);
    }
    expect(await count(sql`select count(*)::int as n from email_events`)).toBe(eventsBefore);
    expect(
      await count(
        sql`select count(*)::int as n from email_attachments where email_id = any(${oldIds}::uuid[])`,
      ),
    ).toBe(0);

    const old = await server.call('GET', `/v1/emails/${oldIds[0]}`, { key });
    expect(old.status).toBe(200);
    expect(old.body).toMatchObject({
      id: oldIds[0],
      status: 'sent',
      to: ['old-1@example.org'],
      subject: 'Retention old-1',
      tags: [{ name: 'kind', value: 'old-1' }],
      attachments: [expect.objectContaining({ filename: 'note.txt' })],
      html: null,
      text: null,
    });
    expect(old.body.events.map((e: { type: string }) => e.type)).toEqual(['queued', 'sent']);
    const detail = await getEmail(server.runtime.ctx, projectId, oldIds[0]);
    expect(detail.body_pruned_at).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    const templated = await server.call('GET', `/v1/emails/${templatedId}`, { key });
    expect(templated.status).toBe(200);
    expect(templated.body).toMatchObject({
      subject: 'Hello Ada',
      html: null,
      text: null,
      template: { version: 1 },
    });
    // the list still counts and shows them
    const list = await server.call('GET', '/v1/emails?limit=100', { key });
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining(oldIds));

    // a message still to be sent keeps its body however old; a recent one keeps everything
    const scheduled = await server.call('GET', `/v1/emails/${scheduledId}`, { key });
    expect(scheduled.body).toMatchObject({ status: 'scheduled', html: '<p>HTML of scheduled</p>' });
    const recent = await server.call('GET', `/v1/emails/${recentId}`, { key });
    expect(recent.body).toMatchObject({ html: '<p>HTML of recent</p>', text: 'Text of recent' });
    expect((await getEmail(server.runtime.ctx, projectId, recentId)).body_pruned_at).toBeNull();
    expect(
      await count(sql`select count(*)::int as n from email_attachments where email_id = ${recentId}::uuid`),
    ).toBe(1);
  });

  it('takes nothing more on a second run, and the recent rows once the clock has moved past their period', async () => {
    const again = await pruneExpiredData(db(), periods(), { batchSize: 2 });
    expect(again.map((r) => r.pruned)).toEqual([0, 0, 0, 0, 0, 0, 0]);

    const later = new Date(Date.now() + 31 * DAY);
    const results = byKind(await pruneExpiredData(db(), periods(), { now: later }));
    expect(results.message_bodies.pruned).toBe(1); // the recent email; the scheduled one is not sent yet
    expect(results.webhook_attempts.pruned).toBe(1); // the pending one stays
    expect(results.inbound_raw.pruned).toBe(1);
    expect(results.provider_feedback.pruned).toBe(1);
    expect(results.idempotency_keys.pruned).toBe(2);
    expect(results.request_logs.pruned).toBeGreaterThan(0);
    const recent = await server.call('GET', `/v1/emails/${recentId}`, { key });
    expect(recent.body).toMatchObject({ status: 'sent', html: null, text: null });
    expect((await server.call('GET', `/v1/emails/${scheduledId}`, { key })).body.html).toBe(
      '<p>HTML of scheduled</p>',
    );
  });

  it('keeps forever what has a period of 0', async () => {
    await insertInbound(400, ['ancient']);
    const forever = {
      ...periods(),
      requestLogsDays: 0,
      webhookAttemptsDays: 0,
      messageBodiesDays: 0,
      inboundRawDays: 0,
      providerFeedbackDays: 0,
    };
    const results = await pruneExpiredData(db(), forever, { now: new Date(Date.now() + 1000 * DAY) });
    for (const r of results.filter((x) => x.kind !== 'idempotency_keys')) {
      expect(r.cutoff, r.kind).toBeNull();
      expect(r.statements, r.kind).toBe(0);
    }
    const ancient = await sql<{
      size: number;
    }>`select length(raw) as size from inbound_messages where subject = 'ancient'`.execute(db());
    expect(ancient.rows[0].size).toBeGreaterThan(0);
  });

  it('runs in the hourly maintenance job', async () => {
    await insertAttempts(45, ['failed']);
    await insertInbound(45, ['hourly']);
    await sql`select graphile_worker.add_job('maintenance', '{}'::json)`.execute(db());
    await eventually(
      async () => {
        expect(
          await count(sql`select count(*)::int as n from webhook_deliveries where status = 'failed'`),
        ).toBe(0);
        expect(
          await count(
            sql`select count(*)::int as n from inbound_messages where subject = 'hourly' and raw_pruned_at is not null`,
          ),
        ).toBe(1);
      },
      { timeoutMs: 15_000, message: 'the maintenance job did not prune' },
    );
  });

  it('reads its periods from the environment, with documented defaults', () => {
    const base = { POSTHORN_SECRET: 'x'.repeat(32), POSTHORN_DATA_DIR: '/tmp/posthorn-retention-config' };
    expect(loadConfig(base).retention).toEqual({
      requestLogsDays: 30,
      webhookAttemptsDays: 30,
      idempotencyHours: 24,
      messageBodiesDays: 30,
      inboundRawDays: 30,
      providerFeedbackDays: 30,
    });
    expect(
      loadConfig({
        ...base,
        POSTHORN_RETENTION_MESSAGE_BODIES_DAYS: '0',
        POSTHORN_RETENTION_REQUEST_LOGS_DAYS: '7',
        POSTHORN_RETENTION_PROVIDER_FEEDBACK_DAYS: '90',
      }).retention,
    ).toMatchObject({ messageBodiesDays: 0, requestLogsDays: 7, providerFeedbackDays: 90 });
    // an idempotency key is honoured for 24 hours: a shorter period would break that promise
    expect(() => loadConfig({ ...base, POSTHORN_RETENTION_IDEMPOTENCY_HOURS: '12' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, POSTHORN_RETENTION_INBOUND_RAW_DAYS: 'a week' })).toThrow(
      /POSTHORN_RETENTION_INBOUND_RAW_DAYS must be a whole number/,
    );
  });
});

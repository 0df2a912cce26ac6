import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedDatabase, freePort, startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { insertVerifiedDomain } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { workerProcesses } from '../helpers/worker-process.ts';

/**
 * Campaigns and flows through the faults of issue 20: two worker processes and two API nodes on one
 * PostgreSQL; a worker stopped with SIGTERM mid-campaign and mid-flow; PostgreSQL stopped and
 * started while a campaign sends and a flow advances; the relay answering 421 for a while. Each
 * counts recipients expected against messages delivered, by Message-ID: none lost, and a repeat
 * only as an at-least-once resend under the same Message-ID.
 */

const SECRET = 'marketing-faults-test-secret-0123456789ab';
const DOMAIN = 'faults.example';
const root = path.resolve(import.meta.dirname, '../..');

let dataDir: string;
let dbPort: number;
let database: EmbeddedDatabase | null = null;
let databaseUrl: string;
let server: TestServer;
let secondApi: ChildProcess;
let secondApiUrl: string;
let key: string;
let projectId: string;
const workers = workerProcesses(() => ({ databaseUrl, secret: SECRET }));
const RETRY_SCHEDULE = '1,1,2,2,3';
const startWorker = () =>
  workers.start(server.sink.url, {
    POSTHORN_STALE_WORKER_SECONDS: '2',
    POSTHORN_WORKER_CONCURRENCY: '6',
    POSTHORN_RETRY_SCHEDULE: RETRY_SCHEDULE,
  });
const running: ChildProcess[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-mfaults-'));
  dbPort = await freePort();
  database = await startEmbeddedPostgres({ dataDir, port: dbPort });
  databaseUrl = database.url;
  // the API in this process; the workers, and a second API node, in processes of their own
  server = await startTestServer(
    { DATABASE_URL: databaseUrl, POSTHORN_SECRET: SECRET, POSTHORN_RETRY_SCHEDULE: RETRY_SCHEDULE },
    ['api'],
  );
  running.push(startWorker(), startWorker());
  const account = await server.signupConfirmed();
  key = account.project_key.key;
  projectId = account.project.id;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  await insertVerifiedDomain(server, projectId, DOMAIN);
  const footer = await server.call('PATCH', '/v1/me/footer', {
    key,
    body: { address: 'Faults Ltd, 9 Dock Road, Hull HU1 1AA' },
  });
  expect(footer.status).toBe(200);
  const port = await freePort();
  secondApiUrl = `http://127.0.0.1:${port}`;
  secondApi = spawn(process.execPath, ['bin/posthorn.js', 'api'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      POSTHORN_SECRET: SECRET,
      POSTHORN_DATA_DIR: dataDir,
      PORT: String(port),
      POSTHORN_RATE_LIMIT: '0',
      // domains verified in the database have no DNS for the bulk-sender gate to judge
      POSTHORN_BULK_GATE: 'off',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await eventually(async () => (await fetch(`${secondApiUrl}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    intervalMs: 200,
    message: 'the second API node did not get ready',
  });
}, 180_000);

afterAll(async () => {
  secondApi?.kill('SIGTERM');
  await workers.stopAll('SIGTERM');
  await server?.close();
  await database?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

const api = (base: string) => async (method: string, p: string, body?: unknown) => {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
const nodes = () => [api(server.url), api(secondApiUrl)];

/** A sent campaign to `n` new contacts of its own list (made in SQL); its recipients' addresses. */
async function campaign(label: string, n: number) {
  const call = api(server.url);
  const list = await call('POST', '/v1/lists', { name: label });
  await sql`with c as (
      insert into contacts (project_id, email) select ${projectId}::uuid, ${label} || '-' || g || '@readers.example'
        from generate_series(1, ${n}) g returning id)
    insert into list_members (list_id, contact_id) select ${list.body.id}::uuid, id from c`.execute(
    server.runtime.ctx.db,
  );
  const made = await call('POST', '/v1/campaigns', {
    name: label,
    from: `News <news@${DOMAIN}>`,
    subject: `${label} for {{ contact.email }}`,
    html: '<p>Hello</p>',
    list_ids: [list.body.id],
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  const sent = await call('POST', `/v1/campaigns/${made.body.id}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return {
    id: made.body.id as string,
    recipients: Array.from({ length: n }, (_, i) => `${label}-${i + 1}@readers.example`),
  };
}

/** An active flow: contact_created → (a wait) → send. */
async function welcomeFlow(label: string, waitSeconds = 0) {
  const call = api(server.url);
  const steps = [
    ...(waitSeconds > 0 ? [{ type: 'wait', duration_seconds: waitSeconds }] : []),
    { type: 'send', from: `News <news@${DOMAIN}>`, subject: `${label} welcome`, html: '<p>Welcome</p>' },
  ];
  const flow = await call('POST', '/v1/flows', { name: label, trigger: { type: 'contact_created' }, steps });
  expect(flow.status, JSON.stringify(flow.body)).toBe(200);
  expect((await call('POST', `/v1/flows/${flow.body.id}/activate`)).status).toBe(200);
  return flow.body.id as string;
}

/** Contacts created through the two API nodes in turn (the flow's trigger). */
async function createContacts(label: string, n: number) {
  const emails = Array.from({ length: n }, (_, i) => `${label}-new${i + 1}@joiners.example`);
  const [a, b] = nodes();
  for (const [i, email] of emails.entries()) {
    const res = await (i % 2 === 0 ? a : b)('POST', '/v1/contacts', { email });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  return emails;
}

/**
 * Waits until every address has a message whose subject matches, then counts: each must have
 * exactly one distinct Message-ID; repeats of it are at-least-once duplicates.
 */
async function delivered(what: string, addresses: string[], subject: RegExp, timeoutMs = 120_000) {
  const wanted = new Set(addresses);
  const matching = () =>
    server.sink.messages.filter((m) => wanted.has(m.to[0]) && subject.test(m.parsed.subject ?? ''));
  await eventually(() => new Set(matching().map((m) => m.to[0])).size === wanted.size, {
    timeoutMs,
    intervalMs: 250,
    message: `${what}: not every recipient got its message`,
  });
  const byRecipient = new Map<string, Set<string>>();
  for (const m of matching()) {
    const ids = byRecipient.get(m.to[0]) ?? new Set<string>();
    ids.add(m.parsed.messageId as string);
    byRecipient.set(m.to[0], ids);
  }
  const twoIds = [...byRecipient].filter(([, ids]) => ids.size > 1).map(([to]) => to);
  expect(twoIds, `${what}: a recipient got two different messages`).toEqual([]);
  const messages = matching().length;
  const duplicates = messages - byRecipient.size;
  console.log(
    `${what}: ${addresses.length} expected, ${byRecipient.size} delivered, ${addresses.length - byRecipient.size} lost, ${duplicates} duplicates (same Message-ID)`,
  );
}

const status = async (p: string) => (await api(server.url)('GET', p)).body;
const campaignSent = (id: string) =>
  eventually(async () => (await status(`/v1/campaigns/${id}`)).status === 'sent', {
    timeoutMs: 120_000,
    intervalMs: 250,
    message: `campaign ${id} did not reach sent`,
  });
const flowCompleted = (id: string, n: number) =>
  eventually(async () => (await status(`/v1/flows/${id}`)).stats.completed === n, {
    timeoutMs: 120_000,
    intervalMs: 250,
    message: `flow ${id}: not every enrollment completed`,
  });
/** Waits until `n` messages of the campaign (by subject) have reached the sink. */
const campaignUnderWay = (subject: RegExp, n: number) =>
  eventually(() => server.sink.messages.filter((m) => subject.test(m.parsed.subject ?? '')).length >= n, {
    timeoutMs: 60_000,
    intervalMs: 50,
    message: 'the campaign did not start',
  });
const pauseFlow = async (id: string) =>
  expect((await api(server.url)('POST', `/v1/flows/${id}/pause`)).status).toBe(200);

describe('campaigns and flows through faults', () => {
  it('two workers and two API nodes: each campaign recipient and each new contact of a flow gets one message', async () => {
    const flow = await welcomeFlow('nodes');
    const sent = await campaign('nodes', 300);
    const joiners = await createContacts('nodes', 40);
    await delivered('two workers, campaign', sent.recipients, /^nodes for /);
    await delivered('two workers, flow from two API nodes', joiners, /^nodes welcome$/);
    await campaignSent(sent.id);
    await flowCompleted(flow, 40);
    await pauseFlow(flow);
  }, 180_000);

  it('a worker stopped with SIGTERM mid-campaign and mid-flow: the other finishes, nothing lost', async () => {
    const flow = await welcomeFlow('sigterm', 2);
    const sent = await campaign('sigterm', 2_000);
    const joiners = await createContacts('sigterm', 40);
    await campaignUnderWay(/^sigterm for /, 200);
    const stopped = running.shift() as ChildProcess;
    const exit = new Promise<number | null>((resolve) => stopped.once('exit', (code) => resolve(code)));
    stopped.kill('SIGTERM');
    expect(await exit).toBe(0);
    await delivered('SIGTERM of a worker, campaign', sent.recipients, /^sigterm for /);
    await delivered('SIGTERM of a worker, flow', joiners, /^sigterm welcome$/);
    await campaignSent(sent.id);
    await flowCompleted(flow, 40);
    await pauseFlow(flow);
    running.push(startWorker());
  }, 180_000);

  it('PostgreSQL stopped and started while a campaign sends and a flow advances: all delivered, no process restarted', async () => {
    server.sink.delayMs = 5;
    const flow = await welcomeFlow('outage', 3);
    const sent = await campaign('outage', 1_000);
    const joiners = await createContacts('outage', 30);
    await campaignUnderWay(/^outage for /, 100);
    const logged = running.map((w) => workers.output(w).length);
    await database?.stop();
    database = null;
    // down until each worker, busy with the campaign, has found the database gone and waits for it
    await eventually(
      () =>
        running.every((w, i) =>
          // busy (or, just started, still starting): either way waiting for the database
          /database unreachable: the worker waits for it|the database is not reachable yet/.test(
            workers.output(w).slice(logged[i]),
          ),
        ),
      { timeoutMs: 60_000, intervalMs: 100, message: 'a worker did not meet the outage' },
    );
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    database = await startEmbeddedPostgres({ dataDir, port: dbPort });
    server.sink.delayMs = 0;
    await delivered('database outage, campaign', sent.recipients, /^outage for /);
    await delivered('database outage, flow', joiners, /^outage welcome$/);
    await campaignSent(sent.id);
    await flowCompleted(flow, 30);
    await pauseFlow(flow);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${secondApiUrl}/readyz`)).status).toBe(200);
    for (const w of running) {
      expect(w.exitCode, `a worker exited; its last output:\n${workers.output(w).slice(-4000)}`).toBeNull();
    }
  }, 240_000);

  it('the relay answering 421 for a while during a campaign: deferred, then delivered, never bounced', async () => {
    // busy for its first 50 recipients of the campaign, however long they take to come
    let refused = 0;
    server.sink.onRecipient = (address) =>
      address.startsWith('busy-') && refused++ < 50
        ? { code: 421, message: '4.3.2 Service not available, try later' }
        : undefined;
    try {
      const sent = await campaign('busy', 200);
      await delivered('relay answering 421, campaign', sent.recipients, /^busy for /);
      await campaignSent(sent.id);
      const events = await sql<{ type: string; n: number }>`
        select ev.type, count(*)::int as n from campaign_recipients r join email_events ev on ev.email_id = r.email_id
         where r.campaign_id = ${sent.id} and ev.type in ('deferred', 'bounced') group by ev.type`.execute(
        server.runtime.ctx.db,
      );
      const count = Object.fromEntries(events.rows.map((r) => [r.type, r.n]));
      expect(count.deferred ?? 0, 'no message was deferred').toBeGreaterThan(0);
      expect(count.bounced ?? 0).toBe(0);
      expect((await status('/v1/suppressions')).data).toEqual([]);
    } finally {
      server.sink.onRecipient = undefined;
    }
  }, 180_000);
});

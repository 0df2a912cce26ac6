import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { connectDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { createSecrets } from '../../src/domain/core/secrets.ts';
import { RateLimiter } from '../../src/domain/keys/rate-limit.ts';
import { RequestLogWriter } from '../../src/domain/keys/request-log.ts';
import { buildApp } from '../../src/http/app.ts';
import { isLoopbackAddress, refuseMetricsCaller } from '../../src/http/metrics.ts';
import { expectError } from '../helpers/assertions.ts';
import { FROM, waitForStatus } from '../helpers/emails.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SignupResult, startTestServer, type TestServer } from '../helpers/server.ts';
import { RawSmtpSession } from '../helpers/smtp-clients.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (!m) throw new Error(`malformed labels in: ${line}`);
    labels[m[1]] = m[2].replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

function parseValue(raw: string, line: string): number {
  // as Prometheus reads them (Go's ParseFloat): infinities and NaN in any case
  if (/^\+?inf$/i.test(raw)) return Number.POSITIVE_INFINITY;
  if (/^-inf$/i.test(raw)) return Number.NEGATIVE_INFINITY;
  if (/^nan$/i.test(raw)) return Number.NaN;
  const value = Number(raw);
  if (Number.isNaN(value)) throw new Error(`malformed value in: ${line}`);
  return value;
}

/**
 * The Prometheus text exposition format (0.0.4), parsed strictly: every line is HELP, TYPE, a
 * comment, blank, or a sample of a family declared before it; anything else fails the test.
 */
function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (sample: string) =>
    families.get(sample) ?? families.get(sample.replace(/_(bucket|sum|count|total|created)$/, ''));
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const family = families.get(meta[2]) ?? { type: 'untyped', help: '', samples: [] };
      if (meta[1] === 'HELP') family.help = meta[3];
      else {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped']).toContain(meta[3]);
        family.type = meta[3];
      }
      families.set(meta[2], family);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const family = familyOf(m[1]);
    if (!family) throw new Error(`a sample of an undeclared family: ${line}`);
    family.samples.push({ name: m[1], labels: parseLabels(m[2] ?? '', line), value: parseValue(m[3], line) });
  }
  return families;
}

/** The value of one series (0 when it does not exist yet). */
function seriesValue(families: Map<string, Family>, name: string, labels: Record<string, string>): number {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count|total)$/, ''));
  const sample = family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return sample?.value ?? 0;
}

let server: TestServer;
let guarded: TestServer;
let account: SignupResult;
let key: string;
let receiver: ReturnType<typeof createServer>;
let hooksUrl: string;
const TOKEN = 'metrics-token-for-tests-0123456789';

async function scrape(target: TestServer = server, headers: Record<string, string> = {}) {
  const res = await fetch(`${target.url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hooksUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  server = await startTestServer(
    { POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1', POSTHORN_SMTP_PORT: '0', POSTHORN_MX_PORT: '0' },
    ['api', 'worker', 'smtp'],
  );
  guarded = await startTestServer({ POSTHORN_METRICS_TOKEN: TOKEN }, ['api']);
  account = await server.signupConfirmed();
  key = account.project_key.key;
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'starter');
});
afterAll(async () => {
  await server?.close();
  await guarded?.close();
  receiver?.closeAllConnections();
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
});

describe('GET /healthz and GET /readyz', () => {
  it('healthz answers 200 {status: "ok"} without authentication', async () => {
    const res = await server.call('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('readyz is 200 when the database answers and its migrations are those shipped', async () => {
    const res = await server.call('GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok' } });
  });

  it('readyz is 503 when the database has a migration this version does not ship, and 200 again without it', async () => {
    const db = guarded.runtime.ctx.db;
    await sql`insert into posthorn_migrations (version, name) values (9999, '9999_from_a_newer_version.sql')`.execute(
      db,
    );
    const res = await guarded.call('GET', '/readyz');
    expect(res.status).toBe(503);
    expect(res.body.checks).toEqual({
      database: 'ok',
      migrations: 'applied but not shipped with this version: 9999_from_a_newer_version.sql',
    });
    expect(res.body.error).toMatch(/^Not ready: migrations: /);
    await sql`delete from posthorn_migrations where version = 9999`.execute(db);
    expect((await guarded.call('GET', '/readyz')).status).toBe(200);
  });

  it('readyz is 503 (and healthz still 200) when the database refuses connections or never answers', async () => {
    // a port nothing listens on, and a "database" that accepts connections and never answers
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => sockets.add(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentPort = (silent.address() as AddressInfo).port;

    for (const port of [closedPort, silentPort]) {
      const app = await appOn(`postgres://posthorn@127.0.0.1:${port}/posthorn`);
      try {
        const url = await app.listen({ port: 0, host: '127.0.0.1' });
        const ready = await fetch(`${url}/readyz`);
        expect(ready.status, `port ${port}`).toBe(503);
        const body = (await ready.json()) as { error: string; checks: Record<string, string> };
        expect(body.checks.database).toMatch(/^unreachable \(/);
        expect(body.checks.migrations).toBe('unknown: the database did not answer');
        expect(body.error).toMatch(/^Not ready: database: unreachable/);
        expect(JSON.stringify(body)).not.toContain('posthorn@');
        const alive = await fetch(`${url}/healthz`);
        expect(alive.status).toBe(200);
      } finally {
        for (const socket of sockets) socket.destroy();
        await app.close();
        await (app as FastifyInstance & { database: DatabaseHandle }).database.close();
      }
    }
    await new Promise<void>((r) => silent.close(() => r()));
  });
});

/** The real HTTP app on a database that is not there (the roles' runtime would not start on it). */
async function appOn(databaseUrl: string): Promise<FastifyInstance> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-test-'));
  const config = loadConfig({ DATABASE_URL: databaseUrl, POSTHORN_DATA_DIR: dataDir, PORT: '0' });
  rmSync(dataDir, { recursive: true, force: true });
  const database = connectDatabase(databaseUrl, 2);
  const ctx = { db: database.db, pool: database.pool, secrets: createSecrets(config.secret), config };
  const app = await buildApp({
    ctx,
    requestLog: new RequestLogWriter(database.pool),
    rateLimiter: new RateLimiter(database.pool, 0),
    devMailbox: false,
  });
  return Object.assign(app, { database });
}

describe('GET /metrics', () => {
  it('counts requests by route pattern and status, never by raw URL, with a latency histogram', async () => {
    const before = await scrape();
    const route = { method: 'GET', route: '/v1/emails/:id' };
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) expect((await server.call('GET', `/v1/emails/${id}`, { key })).status).toBe(404);
    expect((await server.call('GET', '/v1/emails', { key })).status).toBe(200);
    const after = await scrape();

    const count = (m: typeof before, labels: Record<string, string>) =>
      seriesValue(m, 'posthorn_http_requests_total', labels);
    expect(count(after, { ...route, status: '404' }) - count(before, { ...route, status: '404' })).toBe(3);
    expect(
      count(after, { method: 'GET', route: '/v1/emails', status: '200' }) -
        count(before, { method: 'GET', route: '/v1/emails', status: '200' }),
    ).toBe(1);
    const latency = (m: typeof before) =>
      seriesValue(m, 'posthorn_http_request_duration_seconds_count', route);
    expect(latency(after) - latency(before)).toBe(3);
    expect(
      seriesValue(after, 'posthorn_http_request_duration_seconds_bucket', { ...route, le: '+Inf' }),
    ).toBe(latency(after));
    expect(after.get('posthorn_http_request_duration_seconds')?.type).toBe('histogram');
    const labels = [...after.values()].flatMap((f) => f.samples.flatMap((s) => Object.values(s.labels)));
    for (const id of ids) expect(labels.some((l) => l.includes(id))).toBe(false);
    // the process's own figures come along
    expect(after.get('process_resident_memory_bytes')?.type).toBe('gauge');
  });

  it('counts deliveries by outcome, webhook attempts by outcome and SMTP sessions by door', async () => {
    const hook = await server.call('POST', '/v1/webhooks', {
      key,
      body: { url: hooksUrl, events: ['email.sent'] },
    });
    expect(hook.status).toBe(200);
    const before = await scrape();
    const sent = await server.call('POST', '/v1/emails', {
      key,
      body: { from: FROM, to: 'metrics@example.org', subject: 'Counted', text: 'one delivery' },
    });
    expect(sent.status).toBe(200);
    await waitForStatus(server, key, sent.body.id, 'sent');
    for (const port of [server.runtime.smtp?.submissionPort, server.runtime.smtp?.mxPort]) {
      const { session, greeting } = await RawSmtpSession.connect(port as number);
      expect(greeting.code).toBe(220);
      await session.command('QUIT');
      session.close();
    }
    const delta = (m: Map<string, Family>, name: string, labels: Record<string, string>) =>
      seriesValue(m, name, labels) - seriesValue(before, name, labels);
    await eventually(
      async () => {
        const after = await scrape();
        expect(delta(after, 'posthorn_deliveries_total', { outcome: 'sent' })).toBe(1);
        expect(delta(after, 'posthorn_webhook_attempts_total', { outcome: 'succeeded' })).toBe(1);
        expect(delta(after, 'posthorn_smtp_sessions_total', { door: 'submission' })).toBe(1);
        expect(delta(after, 'posthorn_smtp_sessions_total', { door: 'mx' })).toBe(1);
      },
      { timeoutMs: 15_000, message: 'the counters did not move' },
    );
  });

  it('shows the queue by task and state, read from the database when scraped', async () => {
    const db = server.runtime.ctx.db;
    // a task no worker knows stays waiting; a job for tomorrow is scheduled
    await sql`select graphile_worker.add_job('metrics_probe', '{}'::json, job_key => 'metrics-probe')`.execute(
      db,
    );
    await sql`select graphile_worker.add_job('metrics_probe', '{}'::json, run_at => now() + interval '1 day',
                                            job_key => 'metrics-probe-later')`.execute(db);
    try {
      const metrics = await scrape();
      expect(metrics.get('posthorn_jobs')?.type).toBe('gauge');
      expect(seriesValue(metrics, 'posthorn_jobs', { task: 'metrics_probe', state: 'waiting' })).toBe(1);
      expect(seriesValue(metrics, 'posthorn_jobs', { task: 'metrics_probe', state: 'scheduled' })).toBe(1);
      expect(seriesValue(metrics, 'posthorn_jobs', { task: 'metrics_probe', state: 'running' })).toBe(0);
    } finally {
      await sql`select graphile_worker.remove_job('metrics-probe')`.execute(db);
      await sql`select graphile_worker.remove_job('metrics-probe-later')`.execute(db);
    }
    const gone = await scrape();
    expect(seriesValue(gone, 'posthorn_jobs', { task: 'metrics_probe', state: 'waiting' })).toBe(0);
  });

  it('with POSTHORN_METRICS_TOKEN set, answers only the Bearer token', async () => {
    expectError(await guarded.call('GET', '/metrics'), 401, /POSTHORN_METRICS_TOKEN/);
    expectError(
      await guarded.call('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } }),
      401,
    );
    expectError(await guarded.call('GET', '/metrics', { headers: { authorization: TOKEN } }), 401);
    const metrics = await scrape(guarded, { authorization: `Bearer ${TOKEN}` });
    expect(metrics.get('posthorn_http_requests_total')?.type).toBe('counter');
  });

  it('without a token, refuses a request that came through a proxy, even from this machine', async () => {
    expectError(
      await server.call('GET', '/metrics', { headers: { 'x-forwarded-for': '203.0.113.9' } }),
      403,
      /only to clients on this machine/,
    );
    expectError(await server.call('GET', '/metrics', { headers: { forwarded: 'for=127.0.0.1' } }), 403);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
  });

  it('without a token, serves loopback clients only (the rule itself, for addresses a test cannot come from)', () => {
    const from = (socketAddress: string, forwarded = false) =>
      refuseMetricsCaller(undefined, { authorization: undefined, socketAddress, forwarded });
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
      expect(isLoopbackAddress(address), address).toBe(true);
      expect(from(address), address).toBeNull();
    }
    for (const address of [
      '10.0.0.1',
      '192.168.1.20',
      '203.0.113.9',
      '::ffff:10.0.0.1',
      '2001:db8::1',
      '128.0.0.1',
    ]) {
      expect(isLoopbackAddress(address), address).toBe(false);
      expect(from(address), address).toEqual({ status: 403, error: expect.stringMatching(/this machine/) });
    }
    expect(from('127.0.0.1', true)?.status).toBe(403);
    expect(isLoopbackAddress('127.0.0.1.example.com')).toBe(false);
    expect(isLoopbackAddress(undefined)).toBe(false);
    // with a token, the address does not matter: only the token does
    const withToken = (authorization: string | undefined) =>
      refuseMetricsCaller(TOKEN, { authorization, socketAddress: '127.0.0.1', forwarded: false });
    expect(withToken(undefined)?.status).toBe(401);
    expect(withToken(`Bearer ${TOKEN}`)).toBeNull();
    expect(
      refuseMetricsCaller(TOKEN, {
        authorization: `bearer ${TOKEN}`,
        socketAddress: '203.0.113.9',
        forwarded: true,
      }),
    ).toBeNull();
  });
});

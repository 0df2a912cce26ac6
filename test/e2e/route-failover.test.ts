import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { setWorkspacePlan } from '../../src/domain/accounts/workspaces.ts';
import { eventually } from '../helpers/eventually.ts';
import { signupConfirmedInDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

/**
 * Failover between routes (issue 31, item 5): a rule names two relays; the first is killed while
 * mail flows and brought back. Messages go on through the second while the first is down (only a
 * failure that proves the first did not take a message moves it), the first is marked unhealthy,
 * and a probe brings it back. Every acknowledged message is delivered (at least once, by
 * Message-ID); the counts and the times to fail over and back are printed.
 */

const root = path.resolve(import.meta.dirname, '../..');
const FROM = 'Failover Test <onboarding@posthorn.localhost>';
const dir = mkdtempSync(path.join(tmpdir(), 'posthorn-failover-'));
let server: TestServer;
let primaryPort: number;
let primary: SmtpSink;
let backup: SmtpSink;
let key: string;

beforeAll(async () => {
  primaryPort = await freePort();
  [primary, backup] = await Promise.all([startSmtpSink({ port: primaryPort }), startSmtpSink()]);
  const file = path.join(dir, 'routes.json');
  writeFileSync(
    file,
    JSON.stringify({
      routes: {
        primary: {
          type: 'smtp',
          url: primary.url,
          pool_size: 4,
          timeout_seconds: 5,
          unhealthy_after: 2,
          probe_seconds: 1,
        },
        backup: { type: 'smtp', url: backup.url, pool_size: 4 },
      },
      rules: [{ match: {}, routes: ['primary', 'backup'] }],
    }),
  );
  server = await startTestServer({
    POSTHORN_ROUTES: file,
    POSTHORN_SMTP_RELAY: '',
    POSTHORN_RETRY_SCHEDULE: '1,1,2,2,3',
  });
  const account = await signupConfirmedInDatabase(server);
  await setWorkspacePlan(server.runtime.ctx, account.workspace.id, 'unlimited');
  key = account.project_key.key;
}, 60_000);

afterAll(async () => {
  await server?.close();
  await Promise.all([primary?.close(), backup?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a rule with two routes', () => {
  it('fails over to the second while the first is down, and back once a probe finds it again', async () => {
    const acknowledged: string[] = [];
    const messageIds = new Map<string, string>();
    const send = async () => {
      const n = acknowledged.length;
      const res = await server.call('POST', '/v1/emails', {
        key,
        body: { from: FROM, to: `reader${n}@example.org`, subject: `Failover ${n}`, text: 'x' },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      acknowledged.push(res.body.id);
    };
    const arrivedAt = (sink: SmtpSink, after: number) => sink.messages.filter((m) => m.receivedAt >= after);
    /** Sends one message at a time until `done` holds (at most `max` more), so the load lasts as long as the phase. */
    const sendUntil = async (done: () => boolean, max: number) => {
      for (let i = 0; i < max && !done(); i++) await send();
      await eventually(() => expect(done()).toBe(true), { timeoutMs: 60_000 });
    };

    // (1) both up: mail leaves by the first route
    await sendUntil(() => primary.messages.length >= 20, 500);
    expect(backup.messages).toHaveLength(0);

    // (2) the first relay dies mid-run: mail goes on through the second
    const killedAt = Date.now();
    await primary.kill();
    await sendUntil(() => arrivedAt(backup, killedAt).length >= 20, 500);
    const failedOverMs = Math.min(...arrivedAt(backup, killedAt).map((m) => m.receivedAt)) - killedAt;
    const [route] = server.runtime.routes.list();
    expect(route.name).toBe('primary');
    expect(route.health.state().healthy).toBe(false);

    // (3) it comes back on the same port: a probe finds it and mail leaves by it again
    const restartedAt = Date.now();
    const revived = await startSmtpSink({ port: primaryPort });
    try {
      await sendUntil(() => revived.messages.length >= 20, 2_000);
      const backMs = Math.min(...revived.messages.map((m) => m.receivedAt)) - restartedAt;
      expect(route.health.state().healthy).toBe(true);

      // every acknowledged message reaches one of the relays (by Message-ID), none is lost
      for (const id of acknowledged) {
        const row = await server.runtime.ctx.db
          .selectFrom('emails')
          .select('message_id')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        messageIds.set(id, row.message_id);
      }
      const all = [...primary.messages, ...backup.messages, ...revived.messages];
      const arrivals = (messageId: string) => all.filter((m) => m.parsed.messageId === messageId).length;
      await eventually(
        () => {
          const missing = [...messageIds.values()].filter((m) => arrivals(m) === 0);
          expect(missing).toEqual([]);
        },
        { timeoutMs: 60_000 },
      );
      const delivered = [...messageIds.values()].filter((m) => arrivals(m) > 0).length;
      const duplicates = [...messageIds.values()].reduce((sum, m) => sum + Math.max(0, arrivals(m) - 1), 0);
      console.log(
        `route failover: acknowledged ${acknowledged.length}, delivered ${delivered}, lost ${acknowledged.length - delivered}, duplicates ${duplicates}; ` +
          `primary before ${primary.messages.length}, backup ${backup.messages.length}, primary after ${revived.messages.length}; ` +
          `failed over in ${failedOverMs} ms, back in ${backMs} ms`,
      );
      expect(delivered).toBe(acknowledged.length);
      // once it is healthy again, new mail leaves by it, not by the second
      const before = acknowledged.length;
      for (let i = 0; i < 5; i++) await send();
      const lastFive = await Promise.all(
        acknowledged.slice(before).map(async (id) => {
          const row = await server.runtime.ctx.db
            .selectFrom('emails')
            .select('message_id')
            .where('id', '=', id)
            .executeTakeFirstOrThrow();
          return revived
            .waitFor((m) => m.parsed.messageId === row.message_id, 60_000)
            .then(() => row.message_id);
        }),
      );
      for (const messageId of lastFive)
        expect(backup.messages.filter((m) => m.parsed.messageId === messageId)).toHaveLength(0);
    } finally {
      await revived.close();
    }
  }, 240_000);

  it('shows the operator each route, its health and traffic, in GET /v1/admin/routes and posthorn admin routes', async () => {
    // the worker writes what it saw every 2 s: the first route's failures and both routes' traffic
    const report = await eventually(
      async () => {
        const res = await server.call('GET', '/v1/admin/routes');
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const [first, second] = res.body.routes;
        expect(first).toMatchObject({ name: 'primary', type: 'smtp', target: primary.url, healthy: true });
        expect(first.not_taken).toBeGreaterThanOrEqual(2);
        expect(first.taken).toBeGreaterThan(0);
        expect(second).toMatchObject({ name: 'backup', target: backup.url, healthy: true });
        expect(second.taken).toBeGreaterThan(0);
        return res.body;
      },
      { timeoutMs: 30_000 },
    );
    expect(report.rules).toEqual([{ match: {}, routes: ['primary', 'backup'] }]);
    expect(report.routes[0].nodes[0].last_error).toContain('ECONNREFUSED');
    // an operator's endpoint: not for a client elsewhere, nor through a proxy
    const elsewhere = await server.app.inject({
      method: 'GET',
      url: '/v1/admin/routes',
      remoteAddress: '203.0.113.7',
    });
    expect(elsewhere.statusCode).toBe(403);
    expect(elsewhere.json().error).toContain('POSTHORN_METRICS_TOKEN');
    const proxied = await server.app.inject({
      method: 'GET',
      url: '/v1/admin/routes',
      headers: { 'x-forwarded-for': '203.0.113.7' },
    });
    expect(proxied.statusCode).toBe(403);

    const cli = spawnSync(process.execPath, ['bin/posthorn.js', 'admin', 'routes'], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: server.databaseUrl,
        POSTHORN_DATA_DIR: dir,
        POSTHORN_SECRET: server.runtime.ctx.config.secret,
        POSTHORN_ROUTES: path.join(dir, 'routes.json'),
        POSTHORN_SMTP_RELAY: '',
        LOG_LEVEL: 'warn',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`primary  smtp ${primary.url}  healthy  taken ${report.routes[0].taken}`);
    expect(cli.stdout).toContain('1. every message -> primary, backup');
  }, 120_000);
});

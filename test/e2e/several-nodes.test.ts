import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { eventually } from '../helpers/eventually.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

/**
 * Several nodes on one PostgreSQL (issue 20; DESIGN.md's stateless nodes): `posthorn api` twice,
 * `posthorn worker` twice and `posthorn smtp` once, each its own process with the same secret.
 * Sends through both API nodes and the SMTP door are each delivered once; a key revoked through
 * one node is refused by the other on the next request; the rate limit holds across nodes.
 */

const root = path.resolve(import.meta.dirname, '../..');
const SECRET = 'several-nodes-test-secret-0123456789abcdef';
const FROM = 'Nodes Test <onboarding@posthorn.localhost>';
const RATE_LIMIT = 10;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let sink: SmtpSink;
let dataDir: string;
const children: ChildProcess[] = [];
const apiPorts: number[] = [];
let smtpPort: number;
let output = '';

function start(role: string, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['bin/posthorn.js', role], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      POSTHORN_SECRET: SECRET,
      POSTHORN_DATA_DIR: dataDir,
      POSTHORN_SMTP_RELAY: sink.url,
      POSTHORN_RATE_LIMIT: String(RATE_LIMIT),
      POSTHORN_WORKER_CONCURRENCY: '6',
      // domains verified in the database have no DNS for the bulk-sender gate to judge
      POSTHORN_BULK_GATE: 'off',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  children.push(child);
  return child;
}

const ready = (port: number) =>
  eventually(
    async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status !== 200) throw new Error(`readyz ${res.status}`);
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 200, message: `the API on ${port} did not get ready` },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${output}`);
  });

async function call(port: number, method: string, p: string, key: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

beforeAll(async () => {
  database = await createTestDatabase();
  sink = await startSmtpSink();
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-nodes-'));
  apiPorts.push(await freePort(), await freePort());
  smtpPort = await freePort();
  // the first node migrates the database; the others start once it is ready
  start('api', { PORT: String(apiPorts[0]) });
  await ready(apiPorts[0]);
  start('api', { PORT: String(apiPorts[1]) });
  start('worker', {});
  start('worker', {});
  start('smtp', { POSTHORN_SMTP_PORT: String(smtpPort), POSTHORN_MX_PORT: String(await freePort()) });
  await ready(apiPorts[1]);
}, 120_000);

afterAll(async () => {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }),
  );
  await sink?.close();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe('two API nodes, two workers and an SMTP node on one PostgreSQL', () => {
  let key: string;
  let accountKey: string;
  let projectId: string;

  it('deliver what each API node and the SMTP door accepted, each once', async () => {
    const signup = await fetch(`http://127.0.0.1:${apiPorts[0]}/v1/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'nodes@example.com', name: 'Nodes', accept_terms: true }),
    });
    const account = (await signup.json()) as {
      project_key: { key: string };
      account_key: { key: string };
      project: { id: string };
    };
    expect(signup.status, JSON.stringify(account)).toBe(200);
    key = account.project_key.key;
    accountKey = account.account_key.key;
    projectId = account.project.id;
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    await db.query('update accounts set email_confirmed_at = now()');
    await db.query(`update workspaces set plan = 'unlimited'`);

    const accepted: string[] = []; // email ids
    for (let i = 0; i < 40; i++) {
      const port = apiPorts[i % 2];
      const res = await call(port, 'POST', '/v1/emails', key, {
        from: FROM,
        to: `node${i}@example.org`,
        subject: `through node ${i % 2} #${i}`,
        text: 'x',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      accepted.push(res.body.id);
      // one request a little over every 100 ms keeps under the shared limit of 10 a second
      await new Promise((r) => setTimeout(r, 110));
    }
    const smtp = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: 'posthorn', pass: key },
    });
    for (let i = 0; i < 10; i++) {
      const info = await smtp.sendMail({
        from: FROM,
        to: `smtp${i}@example.org`,
        subject: `smtp #${i}`,
        text: 'x',
      });
      const id = /queued as ([0-9a-f-]{36})/.exec(info.response)?.[1];
      expect(id, info.response).toBeDefined();
      accepted.push(id as string);
    }
    smtp.close();

    const { rows } = await db.query<{ message_id: string }>(
      'select message_id from emails where id = any($1::uuid[])',
      [accepted],
    );
    expect(rows.length).toBe(accepted.length);
    const wanted = new Set(rows.map((r) => r.message_id));
    await eventually(
      () => {
        const got = new Set(sink.messages.map((m) => m.parsed.messageId));
        return [...wanted].every((id) => got.has(id));
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'an accepted message was not delivered' },
    );
    // settle: every email recorded as handed over and no delivery job left to run (none waiting,
    // none running, none to retry); a second delivery of the same message would have arrived by then
    await eventually(
      async () => {
        const { rows: left } = await db.query<{ jobs: number; open: number }>(
          `select (select count(*)::int from graphile_worker.jobs where task_identifier in ('deliver_email', 'deliver_transactional')) as jobs,
                  (select count(*)::int from emails where id = any($1::uuid[])
                      and status in ('scheduled', 'queued', 'sending', 'deferred')) as open`,
          [accepted],
        );
        expect(left[0]).toEqual({ jobs: 0, open: 0 });
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'deliveries still under way' },
    );
    await db.end();
    const received = sink.messages.map((m) => m.parsed.messageId as string).filter((id) => wanted.has(id));
    const duplicates = received.length - new Set(received).size;
    console.log(
      `several nodes: ${accepted.length} acknowledged (20 + 20 through the two API nodes, 10 through SMTP), ${new Set(received).size} delivered, 0 lost, ${duplicates} duplicates`,
    );
    expect(duplicates).toBe(0);
  }, 120_000);

  it('a key revoked through one node is refused by the other on the next request', async () => {
    const made = await call(apiPorts[0], 'POST', `/v1/projects/${projectId}/api-keys`, accountKey, {
      name: 'short-lived',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect((await call(apiPorts[1], 'GET', '/v1/me', made.body.key)).status).toBe(200);
    const revoked = await call(apiPorts[0], 'DELETE', `/v1/api-keys/${made.body.id}`, accountKey);
    expect(revoked.status).toBeLessThan(300);
    expect((await call(apiPorts[1], 'GET', '/v1/me', made.body.key)).status).toBe(401);
  });

  it('holds the rate limit across nodes: one window admits the limit, whichever node is asked', async () => {
    // start just after a second begins, so all requests fall in one window
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 20));
    const first = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(apiPorts[i % 2], 'GET', '/v1/me', key).then((r) => r.status)),
    );
    // on a slow moment the requests may reach into the next second: each window admits the limit
    const windows = Math.floor(Date.now() / 1000) - Math.floor(first / 1000) + 1;
    const ok = answers.filter((s) => s === 200).length;
    const limited = answers.filter((s) => s === 429).length;
    console.log(
      `rate limit ${RATE_LIMIT}/s across two nodes: ${ok} admitted, ${limited} refused with 429 of 30 (${windows} one-second window${windows > 1 ? 's' : ''})`,
    );
    expect(ok + limited).toBe(30);
    expect(ok).toBeLessThanOrEqual(RATE_LIMIT * windows);
    expect(ok).toBeGreaterThan(0);
  });

  it('SIGTERM of an API node, a worker and the SMTP node under load: each exits cleanly, nothing acknowledged is lost', async () => {
    const [, api1, , worker1, smtpNode] = children;
    const acknowledged: string[] = [];
    const before = sink.messages.length;
    let stop = false;
    let n = 0;
    // each load's attempts and acknowledgements: api node 1, api node 2, SMTP
    const attempts = [0, 0, 0];
    const acks = [0, 0, 0];
    // through both API nodes (the second is stopped midway: a refused connection is not an acknowledgement)
    const apiLoad = (port: number, load: number) =>
      (async () => {
        while (!stop) {
          const i = n++;
          attempts[load]++;
          try {
            const res = await call(port, 'POST', '/v1/emails', key, {
              from: FROM,
              to: `term${i}@example.org`,
              subject: `sigterm #${i}`,
              text: 'x',
            });
            if (res.status === 200) {
              acknowledged.push(res.body.id);
              acks[load]++;
            }
          } catch {
            // the node has gone: not acknowledged
          }
          await new Promise((r) => setTimeout(r, 250));
        }
      })();
    const smtpLoad = (async () => {
      const smtp = nodemailer.createTransport({
        host: '127.0.0.1',
        port: smtpPort,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
        auth: { user: 'posthorn', pass: key },
      });
      while (!stop) {
        const i = n++;
        attempts[2]++;
        try {
          const info = await smtp.sendMail({
            from: FROM,
            to: `term${i}@example.org`,
            subject: `sigterm #${i}`,
            text: 'x',
          });
          const id = /queued as ([0-9a-f-]{36})/.exec(info.response)?.[1];
          if (id) {
            acknowledged.push(id);
            acks[2]++;
          }
        } catch {
          // the SMTP node has gone: not acknowledged
        }
        await new Promise((r) => setTimeout(r, 300));
      }
      smtp.close();
    })();
    const loads = [apiLoad(apiPorts[0], 0), apiLoad(apiPorts[1], 1), smtpLoad];
    // under load: more than 10 messages acknowledged, each of the three loads with some of them
    await eventually(() => acknowledged.length > 10 && acks.every((a) => a > 0), {
      timeoutMs: 30_000,
      message: 'the load did not get going',
    }).catch((err: Error) => {
      throw new Error(`${err.message} (acknowledged by each load: ${acks})`);
    });
    const exits = [api1, worker1, smtpNode].map(
      (child) =>
        new Promise<number | null>((resolve) => {
          child.once('exit', (code) => resolve(code));
          child.kill('SIGTERM');
        }),
    );
    const codes = await Promise.race([
      Promise.all(exits),
      new Promise<string>((r) => setTimeout(() => r('a node did not exit within 20 s of SIGTERM'), 20_000)),
    ]);
    expect(codes).toEqual([0, 0, 0]);
    // the load goes on after the nodes have gone: each load tries again at least once
    const atExit = [...attempts];
    await eventually(() => expect(attempts.every((a, k) => a > atExit[k])).toBe(true), { timeoutMs: 30_000 });
    stop = true;
    await Promise.all(loads);

    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const { rows } = await db.query<{ message_id: string }>(
      'select message_id from emails where id = any($1::uuid[])',
      [acknowledged],
    );
    await db.end();
    expect(rows.length).toBe(acknowledged.length);
    const wanted = new Set(rows.map((r) => r.message_id));
    await eventually(
      () => {
        const got = new Set(sink.messages.slice(before).map((m) => m.parsed.messageId));
        return [...wanted].every((id) => got.has(id));
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'an acknowledged message was not delivered' },
    );
    const received = sink.messages
      .slice(before)
      .map((m) => m.parsed.messageId as string)
      .filter((id) => wanted.has(id));
    console.log(
      `SIGTERM of api, worker and smtp nodes under load: ${acknowledged.length} acknowledged, ${new Set(received).size} delivered, 0 lost, ${received.length - new Set(received).size} duplicates (same Message-ID)`,
    );
    expect(acknowledged.length).toBeGreaterThan(10);
  }, 120_000);
});

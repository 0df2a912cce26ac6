import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { eventually } from '../helpers/eventually.ts';
import { codeIn, type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

const root = path.resolve(import.meta.dirname, '../..');
// exactly what `npm start` runs, with the Node that runs the tests (Node 24 from node_modules/.bin)
const startScript: string = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;

let sink: SmtpSink;
let dataDir: string;
let port: number;
let smtpPort: number;
let child: ChildProcess | undefined;
let output = '';

async function startProgram(): Promise<void> {
  const [command, ...args] = startScript.split(' ');
  expect(command).toBe('node');
  child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: '',
      POSTHORN_DATA_DIR: dataDir,
      PORT: String(port),
      POSTHORN_SMTP_PORT: String(smtpPort),
      POSTHORN_MX_PORT: String(await freePort()),
      POSTHORN_SMTP_RELAY: sink.url,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  // up once GET /v1/ answers (fetch throws while nothing listens); a program that exits ends the wait
  const state = await eventually(
    async () => {
      if (child?.exitCode !== null) return 'exited';
      const res = await fetch(`http://127.0.0.1:${port}/v1/`);
      if (!res.ok) throw new Error(`GET /v1/ answered ${res.status}`);
      return 'listening';
    },
    { timeoutMs: 60_000, intervalMs: 200, message: 'the program did not start' },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${output}`);
  });
  if (state === 'exited') throw new Error(`the program exited early (${child.exitCode}):\n${output}`);
}

async function stopProgram(): Promise<number | null> {
  const proc = child as ChildProcess;
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  proc.kill('SIGTERM');
  const code = await exited;
  child = undefined;
  return code;
}

async function api(method: string, p: string, key?: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${p}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  sink = await startSmtpSink();
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-e2e-'));
  port = await freePort();
  smtpPort = await freePort();
});

afterAll(async () => {
  if (child) child.kill('SIGKILL');
  await sink?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start on a fresh data dir', () => {
  it('signs up, confirms with the emailed code, restarts and still has the account', async () => {
    await startProgram();
    const email = 'first.user@example.com';
    const signup = await api('POST', '/v1/signup', undefined, {
      email,
      name: 'First User',
      accept_terms: true,
    });
    expect(signup.status).toBe(200);
    const key = signup.body.project_key.key as string;
    // the same process serves the dashboard at the app URL (built by `npm install`, or at start)
    const app = await fetch(`http://127.0.0.1:${port}/`);
    expect(app.status).toBe(200);
    expect(await app.text()).toContain('<div id="root"></div>');

    const message = await sink.waitFor((m) => m.to.includes(email), 30_000);
    const code = codeIn(message);
    const verified = await api('POST', '/v1/auth/verify-email/code', key, { code });
    expect(verified.status).toBe(200);
    expect(verified.body.email_confirmed).toBe(true);

    // graceful stop: exit code 0 and the embedded PostgreSQL shut down (its pid file removed)
    expect(await stopProgram()).toBe(0);
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);

    await startProgram();
    const me = await api('GET', '/v1/me', key);
    expect(me.status).toBe(200);
    expect(me.body.project.id).toBe(signup.body.project.id);
    expect(me.body.sending.email_confirmed).toBe(true);

    // the SMTP submission door runs in the same process: the API key is the password
    const smtp = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      requireTLS: true,
      tls: { rejectUnauthorized: false }, // the self-signed certificate generated into the data dir
      auth: { user: 'posthorn', pass: key },
    });
    const info = await smtp.sendMail({
      from: 'onboarding@posthorn.localhost',
      to: 'smtp-reader@example.org',
      subject: 'Through npm start',
      text: 'Hello',
    });
    expect(info.response).toMatch(/^250 2\.0\.0 Accepted: queued as/);
    const arrived = await sink.waitFor((m) => m.to.includes('smtp-reader@example.org'), 30_000);
    expect(arrived.parsed.headers.get('x-posthorn-project')).toBe(signup.body.project.id);
    expect(existsSync(path.join(dataDir, 'tls', 'self-signed.crt'))).toBe(true);

    const again = await api('POST', '/v1/signup', undefined, {
      email,
      name: 'First User',
      accept_terms: true,
    });
    expect(again.status).toBe(409);
    expect(await stopProgram()).toBe(0);
  }, 180_000);
});

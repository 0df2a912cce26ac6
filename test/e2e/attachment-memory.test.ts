import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * What attachments given by `path` cost the server (issue 47, Build 2): one message of twelve
 * 39 MB files was fetched whole and base64-encoded before the message's 40 MB refused it (the
 * process grew by 800 MB). A `posthorn api` process of its own, so that its memory is the API's
 * alone: the message is refused once its files pass 40 MB, and the process's peak resident
 * memory (VmHWM, reset before the request) grows by less than 100 MB.
 */

const root = path.resolve(import.meta.dirname, '../..');
const MB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'z');

/** `mb` MB made as they are written, waiting whenever the socket is full (never held in memory). */
function stream(res: ServerResponse, mb: number) {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': mb * MB });
  let left = mb * MB;
  const more = () => {
    while (left > 0 && !res.destroyed) {
      const part = CHUNK.subarray(0, Math.min(CHUNK.length, left));
      left -= part.length;
      if (left === 0) return void res.end(part);
      if (!res.write(part)) return void res.once('drain', more);
    }
  };
  more();
}

let open = 0;
const files = createServer((req, res) => {
  open++;
  res.on('close', () => open--);
  const big = req.url?.match(/^\/big\/\d+\.bin\?mb=(\d+)$/);
  if (big) stream(res, Number(big[1]));
  else res.writeHead(404).end();
});

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let dataDir: string;
let api: ChildProcess | undefined;
let output = '';
let url: string;
let base: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  database = await createTestDatabase();
  dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-attachment-memory-'));
  const port = await freePort();
  api = spawn(process.execPath, ['bin/posthorn.js', 'api'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      POSTHORN_SECRET: 'attachment-memory-test-secret-0123456789',
      POSTHORN_DATA_DIR: dataDir,
      PORT: String(port),
      POSTHORN_RATE_LIMIT: '0',
      // the test's file server is on 127.0.0.1
      POSTHORN_WEBHOOK_ALLOW_PRIVATE: '1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  api.stdout?.on('data', (d) => (output += d));
  api.stderr?.on('data', (d) => (output += d));
  url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    intervalMs: 200,
    message: 'the API did not get ready',
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${output.slice(-4000)}`);
  });
}, 90_000);

afterAll(async () => {
  if (api && api.exitCode === null) {
    const exited = new Promise((resolve) => api?.once('exit', resolve));
    api.kill('SIGTERM');
    await exited;
  }
  files.close();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A line of the process's /proc status, in bytes. */
function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
  if (!line) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(line[1]) * 1024;
}

async function send(key: string, mb: number, count: number) {
  const res = await fetch(`${url}/v1/emails`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      from: 'onboarding@posthorn.localhost',
      to: 'big@example.org',
      subject: 'Twelve files',
      text: 'see attached',
      attachments: Array.from({ length: count }, (_, i) => ({ path: `${base}/big/${i}.bin?mb=${mb}` })),
    }),
  });
  return { status: res.status, body: (await res.json()) as { error?: string } };
}

describe('attachments by URL and the memory of the API process', () => {
  it('refuses twelve 39 MB files once they pass 40 MB, the process growing by less than 100 MB', async () => {
    const signup = await fetch(`${url}/v1/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `big-${randomUUID()}@example.com`, name: 'Big', accept_terms: true }),
    });
    const account = (await signup.json()) as { project_key: { key: string } };
    expect(signup.status, JSON.stringify(account)).toBe(200);
    const key = account.project_key.key;
    // the route's code loaded and run once, a file fetched: what follows is the files' alone
    await send(key, 1, 1);
    await eventually(() => open === 0, { message: 'the first fetch is still open' });

    const pid = api?.pid as number;
    const before = status(pid, 'VmRSS');
    writeFileSync(`/proc/${pid}/clear_refs`, '5'); // VmHWM starts again from the resident size now
    const refused = await send(key, 39, 12);
    const peak = status(pid, 'VmHWM');

    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error).toMatch(
      /^`attachments\[\d+\]\.path`: \S+ makes the message larger than the 40 MB it may be once encoded$/,
    );
    await eventually(() => open === 0, { message: 'fetches still open after the refusal' });
    expect(peak - before, `grew from ${before / MB} MB to ${peak / MB} MB`).toBeLessThan(100 * MB);
  }, 120_000);
});

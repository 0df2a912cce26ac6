import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { eventually } from '../helpers/eventually.ts';

/**
 * `posthorn login` against a server on another port than 3000 (issue 48, build item 7): with
 * `--api-url`, and given no URL, the server running in the folder it is started from (which the
 * server records in its data folder), or the one PORT names; it says which server it took.
 */

const root = path.resolve(import.meta.dirname, '../..');
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let work: string;
let elsewhere: string;
let server: ChildProcess;
let serverExited: Promise<unknown>;
let port: number;
let output = '';

beforeAll(async () => {
  database = await createTestDatabase();
  work = mkdtempSync(path.join(tmpdir(), 'posthorn-login-url-'));
  elsewhere = mkdtempSync(path.join(tmpdir(), 'posthorn-login-elsewhere-'));
  mkdirSync(path.join(work, 'config'));
  port = await freePort();
  server = spawn(process.execPath, [path.join(root, 'bin/posthorn.js'), 'api'], {
    cwd: work,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      POSTHORN_SECRET: 'cli-login-url-test-secret-0123456789abcdef',
      POSTHORN_DATA_DIR: '',
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout?.on('data', (d) => (output += d));
  server.stderr?.on('data', (d) => (output += d));
  serverExited = new Promise((resolve) => server.once('exit', resolve));
  await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, {
    timeoutMs: 60_000,
    intervalMs: 200,
    message: 'the API did not get ready',
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${output.slice(-4000)}`);
  });
}, 90_000);

afterAll(async () => {
  server?.kill('SIGTERM');
  await serverExited;
  await database?.drop();
  rmSync(work, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

/**
 * `posthorn login --no-browser` run in `cwd` with `args` and `env`, without any server setting of
 * this test process; resolves once it shows its code and URL.
 */
async function login(cwd: string, args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(PORT|POSTHORN_.*|DATABASE_URL)$/.test(name)),
  );
  const child = spawn(
    process.execPath,
    [path.join(root, 'bin/posthorn.js'), 'login', '--no-browser', ...args],
    {
      cwd,
      env: { ...clean, POSTHORN_CONFIG_DIR: path.join(work, 'config'), ...env },
    },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  const shown = await eventually(
    () => {
      const code = /Your code: (\S+)/.exec(stderr)?.[1];
      const url = /Open (\S+)/.exec(stderr)?.[1];
      if (!code || !url) throw new Error(`it printed:\n${stderr}`);
      return { code, url: new URL(url) };
    },
    { timeoutMs: 15_000, message: 'posthorn login did not show a code and URL' },
  );
  return { ...shown, exited, stderr: () => stderr };
}

/** The pairing page shows the code; denying it there ends the CLI's wait (it polls this server). */
async function denyOnPage(code: string, url: URL) {
  expect(url.port).toBe(String(port));
  const page = await fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain(code);
  const denied = await fetch(`http://127.0.0.1:${port}/pair`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ code, step: 'deny' }).toString(),
  });
  expect(denied.status).toBe(200);
}

describe('posthorn login on a server at a port of its own', () => {
  it('with --api-url: pairs with that server and says so', async () => {
    const run = await login(elsewhere, ['--api-url', `http://127.0.0.1:${port}/v1`]);
    expect(run.stderr()).toContain(`Server: http://127.0.0.1:${port}/v1 (--api-url)`);
    await denyOnPage(run.code, run.url);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('the pairing was denied');
  }, 60_000);

  it('given no URL, beside a running server: finds it in its data folder and says so', async () => {
    // written once the API listens, beside the start-up summary
    const record = await eventually(
      () => JSON.parse(readFileSync(path.join(work, '.posthorn/server.json'), 'utf8')),
      { timeoutMs: 15_000, message: 'the server did not record where it listens' },
    );
    expect(record.url).toBe(`http://127.0.0.1:${port}`);
    const run = await login(work, []);
    expect(run.stderr()).toMatch(
      new RegExp(`Server: http://127\\.0\\.0\\.1:${port}/v1 \\(the server running here \\(process \\d+`),
    );
    await denyOnPage(run.code, run.url);
    expect(await run.exited).toBe(1);
  }, 60_000);

  it('given no URL elsewhere: the port PORT names', async () => {
    const run = await login(elsewhere, [], { PORT: String(port) });
    expect(run.stderr()).toContain(`Server: http://localhost:${port}/v1 (PORT;`);
    await denyOnPage(run.code, run.url);
    expect(await run.exited).toBe(1);
  }, 60_000);

  it('a stopped server leaves no record behind', async () => {
    server.kill('SIGTERM');
    await serverExited;
    expect(existsSync(path.join(work, '.posthorn/server.json'))).toBe(false);
  }, 60_000);
});

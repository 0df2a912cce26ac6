import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../src/db/embedded.ts';

const root = path.resolve(import.meta.dirname, '..');

export interface BenchServer {
  url: string;
  /** The database the server uses (the embedded one's URL when no BENCH_DATABASE_URL). */
  databaseUrl(): string;
  stop(): Promise<void>;
}

/**
 * Starts Posthorn as a separate process (as `npm start` does), on a fresh embedded PostgreSQL
 * unless BENCH_DATABASE_URL is set, so the load generator does not share its event loop.
 */
export async function startBenchServer(
  env: Record<string, string> = {},
  role = 'start',
): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-'));
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(process.execPath, ['src/main.ts', role], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
      POSTHORN_DATA_DIR: dataDir,
      PORT: String(port),
      POSTHORN_RATE_LIMIT: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`server did not start:\n${output}`);
    try {
      if ((await fetch(`${url}/v1/`)).ok) break;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    databaseUrl() {
      if (process.env.BENCH_DATABASE_URL) return process.env.BENCH_DATABASE_URL;
      const owner = JSON.parse(readFileSync(path.join(dataDir, 'embedded-pg.json'), 'utf8')) as {
        url: string;
      };
      return owner.url.replace(/\/postgres$/, '/posthorn');
    },
    async stop() {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function json(url: string, method: string, key?: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export function machine(): string {
  return `${process.platform} ${process.arch}, ${(globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? '?'} cores, Node ${process.version}`;
}

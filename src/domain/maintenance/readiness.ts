import type pg from 'pg';
import { listMigrations } from '../../db/migrate.ts';

/** What GET /readyz reports: each check is `ok` or says what is wrong. */
export interface Readiness {
  ready: boolean;
  checks: { database: string; migrations: string };
}

let shipped: string[] | undefined;

/** The migration files this version ships, read once. */
function shippedMigrations(): string[] {
  shipped ??= listMigrations().map((m) => m.name);
  return shipped;
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Compares the applied migrations with the shipped files: `ok`, or what is missing or unknown. */
export function compareMigrations(applied: string[], files: string[] = shippedMigrations()): string {
  const missing = files.filter((f) => !applied.includes(f));
  const unknown = applied.filter((a) => !files.includes(a));
  if (missing.length === 0 && unknown.length === 0) return 'ok';
  return [
    missing.length > 0 ? `not applied: ${missing.join(', ')}` : '',
    unknown.length > 0 ? `applied but not shipped with this version: ${unknown.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

/**
 * Whether this node can serve: the database answers (one query on the node's own pool, within
 * `timeoutMs`) and its applied migrations are exactly the files this version ships, so a node of
 * an older or newer version than the schema says so instead of failing request by request.
 */
export async function checkReadiness(pool: pg.Pool, timeoutMs = 2_000): Promise<Readiness> {
  let applied: string[];
  try {
    const { rows } = await within(
      pool.query<{ name: string }>('select name from posthorn_migrations order by version'),
      timeoutMs,
    );
    applied = rows.map((r) => r.name);
  } catch (err) {
    // the database answered, but has never been migrated
    if ((err as { code?: string }).code === '42P01')
      return { ready: false, checks: { database: 'ok', migrations: 'no migration applied' } };
    // a code, not the message: an open endpoint should not print the database's host or user
    const code = (err as { code?: string }).code;
    return {
      ready: false,
      checks: {
        database: `unreachable (${code ?? (err as Error).message})`,
        migrations: 'unknown: the database did not answer',
      },
    };
  }
  const migrations = compareMigrations(applied);
  return { ready: migrations === 'ok', checks: { database: 'ok', migrations } };
}

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger, runMigrations } from 'graphile-worker';
import type pg from 'pg';

export const silentLogger = new Logger(() => () => {});

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
// any constant works; it only has to be the same for every Posthorn process
const MIGRATION_LOCK = 7_420_351_001;

export function listMigrations(): { version: number; name: string; sql: string }[] {
  return readdirSync(migrationsDir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: Number(f.slice(0, 4)),
      name: f,
      sql: readFileSync(path.join(migrationsDir, f), 'utf8'),
    }));
}

/**
 * Applies the numbered SQL files not applied yet, each in its own transaction, under an
 * advisory lock so that several nodes starting together wait for each other instead of racing.
 * Then graphile-worker's own schema.
 */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      `create table if not exists posthorn_migrations (
         version integer primary key, name text not null, applied_at timestamptz not null default now())`,
    );
    const { rows } = await client.query<{ version: number }>('select version from posthorn_migrations');
    const done = new Set(rows.map((r) => r.version));
    for (const m of listMigrations()) {
      if (done.has(m.version)) continue;
      await client.query('begin');
      try {
        await client.query(m.sql);
        await client.query('insert into posthorn_migrations (version, name) values ($1, $2)', [
          m.version,
          m.name,
        ]);
        await client.query('commit');
      } catch (err) {
        await client.query('rollback');
        throw new Error(`migration ${m.name} failed: ${(err as Error).message}`);
      }
      applied.push(m.version);
    }
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
  await runMigrations({ pgPool: pool, logger: silentLogger });
  return applied;
}

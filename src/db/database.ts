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

export function connectDatabase(url: string, max = 20): DatabaseHandle {
  const pool = new pg.Pool({ connectionString: url, max, application_name: 'posthorn' });
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

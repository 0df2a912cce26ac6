import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patientPool } from '../../src/jobs/patient-pool.ts';
import { createTestDatabase } from '../helpers/database.ts';

/**
 * The pool the worker hands graphile-worker (src/jobs/patient-pool.ts), on a real PostgreSQL whose
 * backends this test terminates: a statement on a connection that died is run again on a new one,
 * a statement inside a transaction is not (its transaction is gone with the connection).
 */

let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;
let admin: pg.Pool;
const silent = pino({ level: 'silent' });

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  admin = new pg.Pool({ connectionString: database.url, max: 1 });
});

afterAll(async () => {
  await pool.end();
  await admin.end();
  await database.drop();
});

const backendOf = async (client: pg.PoolClient) =>
  (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
const terminate = (pid: number) => admin.query('select pg_terminate_backend($1)', [pid]);

describe('patientPool', () => {
  it('runs a statement again on a new connection when its connection was terminated', async () => {
    const client = await patientPool(pool, silent).connect();
    const before = await backendOf(client);
    await terminate(before);
    const after = await backendOf(client);
    expect(after).not.toBe(before);
    client.release();
    // the plain pool would have failed the same statement
    const plain = await pool.connect();
    const plainPid = await backendOf(plain);
    await terminate(plainPid);
    await expect(plain.query('select 1')).rejects.toThrow();
    plain.release(true);
  });

  it('does not repeat a statement inside a transaction, and repeats again after it ends', async () => {
    const client = await patientPool(pool, silent).connect();
    await client.query('begin');
    await terminate(await backendOf(client));
    await expect(client.query('select 1')).rejects.toThrow();
    await client.query('rollback').catch(() => {});
    const pid = await backendOf(client);
    await terminate(pid);
    expect(await backendOf(client)).not.toBe(pid);
    client.release();
  });

  it('passes other errors straight through, once', async () => {
    const client = await patientPool(pool, silent).connect();
    await expect(client.query('select * from no_such_table')).rejects.toThrow(/does not exist/);
    expect((await client.query('select 2 as n')).rows[0].n).toBe(2);
    client.release();
  });
});

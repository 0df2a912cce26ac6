import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { connectDatabase } from '../../src/db/database.ts';

/** A fresh database cloned from the migrated template; dropped by `drop()`. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject('pgAdminUrl');
  const template = inject('pgTemplate');
  // the global setup's pid: it drops leftovers by this prefix
  const owner = template.split('_')[2];
  const name = `t_${owner}_${randomBytes(6).toString('hex')}`;
  const admin = connectDatabase(adminUrl, 1);
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.pool.query(`create database ${name} template ${template}`);
      break;
    } catch (err) {
      // two files cloning the template at the same instant: wait and retry
      if (attempt >= 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  await admin.close();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = connectDatabase(adminUrl, 1);
      await a.pool.query(`drop database if exists ${name} with (force)`).catch(() => {});
      await a.close();
    },
  };
}

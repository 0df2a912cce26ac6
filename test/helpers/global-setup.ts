import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connectDatabase } from '../../src/db/database.ts';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { ensureWebBuild } from '../../src/http/web-app.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
  }
}

interface TestPostgres {
  adminUrl: string;
  template: string;
  stop(): Promise<void>;
}

// Vitest runs a global setup once per project that lists it: the projects of one run share the
// server through this process-wide slot, and the last project to finish stops it.
const SHARED = Symbol.for('posthorn.test-postgres');
// the dashboard every test server serves (dist/web): built once per run, and only when missing or stale
const WEB_BUILD = Symbol.for('posthorn.test-web-build');
type Slot = { users: number; started: Promise<TestPostgres> };
const slots = globalThis as typeof globalThis & { [SHARED]?: Slot; [WEB_BUILD]?: Promise<void> };

/**
 * One real PostgreSQL for the whole run (embedded, or TEST_DATABASE_URL), and one migrated
 * template database that every test file clones, so files are isolated and start fast; and the
 * dashboard's build, which every test server serves.
 */
export default async function setup(project: TestProject) {
  slots[SHARED] ??= { users: 0, started: startTestPostgres() };
  const slot = slots[SHARED];
  slot.users++;
  slots[WEB_BUILD] ??= ensureWebBuild();
  const [pg] = await Promise.all([slot.started, slots[WEB_BUILD]]);
  project.provide('pgAdminUrl', pg.adminUrl);
  project.provide('pgTemplate', pg.template);

  return async () => {
    if (--slot.users > 0) return;
    delete slots[SHARED];
    await pg.stop();
  };
}

async function startTestPostgres(): Promise<TestPostgres> {
  let embedded: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    dir = mkdtempSync(path.join(tmpdir(), 'posthorn-test-pg-'));
    embedded = await startEmbeddedPostgres({ dataDir: dir });
    adminUrl = embedded.url;
  }
  const template = `posthorn_tpl_${process.pid}_${Date.now().toString(36)}`;
  const admin = connectDatabase(adminUrl, 2);
  await admin.pool.query(`create database ${template}`);
  const url = new URL(adminUrl);
  url.pathname = `/${template}`;
  const tpl = connectDatabase(url.toString(), 2);
  await migrate(tpl.pool);
  await tpl.close();

  return {
    adminUrl,
    template,
    async stop() {
      try {
        const { rows } = await admin.pool.query<{ datname: string }>(
          'select datname from pg_database where datname like $1',
          [`t_${process.pid}_%`],
        );
        for (const r of rows)
          await admin.pool.query(`drop database if exists ${r.datname} with (force)`).catch(() => {});
        await admin.pool.query(`drop database if exists ${template} with (force)`);
      } finally {
        await admin.close();
        await embedded?.stop();
        if (dir) rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

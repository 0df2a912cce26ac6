import module from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// Node's compile cache, as bin/posthorn.js turns it on: every test file runs in a process of its own
// that loads the same packages, and many start `posthorn`; with the cache (NODE_COMPILE_CACHE, which
// they inherit) each reads them compiled instead of compiling them again
if (!process.env.NODE_DISABLE_COMPILE_CACHE) {
  process.env.NODE_COMPILE_CACHE ||= path.join(tmpdir(), 'node-compile-cache');
  module.enableCompileCache(process.env.NODE_COMPILE_CACHE);
}

// starts one PostgreSQL for the run, shared by every project that lists it (see the file)
const startsPostgres = ['test/helpers/global-setup.ts'];

/**
 * Files that never use the run's PostgreSQL (TEST_DATABASE_URL or the embedded one): each starts
 * its own (`npm start`, a data dir, a PostgreSQL it stops and starts) or none. `.ci/run` sets
 * POSTHORN_TEST_SECOND_PASS on its second `npm test`, against the PostgreSQL server, where these
 * would only repeat the first pass exactly; anyone else's `npm test` runs them.
 */
const ownDatabase = [
  'test/e2e/database-outage.test.ts',
  'test/e2e/marketing-faults.test.ts',
  'test/e2e/npm-install.test.ts',
  'test/e2e/private-folder.test.ts',
  'test/e2e/readme-examples.test.ts',
  'test/e2e/start.test.ts',
];
/**
 * Files whose subject does not depend on which PostgreSQL serves them: the browser tests drive the
 * dashboard through the same API the integration tests run on both databases, the template
 * pools' fairness is a matter of threads, and what an API process loads (test/e2e/api-process) one
 * of files. The second pass leaves them to the first, so CI stays under its 30 minutes; anyone
 * else's `npm test` runs them.
 */
const sameOnEitherDatabase = [
  'test/e2e/dashboard-*.test.ts',
  'test/e2e/*-browser.test.ts',
  'test/e2e/first-hour-journey.test.ts',
  'test/http/template-fairness.test.ts',
  'test/e2e/api-process.test.ts',
];
const secondPass = process.env.POSTHORN_TEST_SECOND_PASS === '1';

/**
 * `npm test` runs three projects: `unit` (no PostgreSQL: `npm run test:unit`), `integration` (the
 * program on a real database, through HTTP and SMTP) and `e2e` (subprocesses, a browser, crashes).
 * Tests that need a Debian package run in `npm run test:interop` (vitest.interop.config.ts).
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // test/http, test/smtp, and any new folder: a test lands here unless it is placed elsewhere
          include: ['test/**/*.test.ts'],
          exclude: [
            ...configDefaults.exclude,
            'test/unit/**',
            'test/e2e/**',
            'test/interop/**',
            ...(secondPass ? sameOnEitherDatabase : []),
          ],
          globalSetup: startsPostgres,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: [
            ...configDefaults.exclude,
            ...(secondPass ? [...ownDatabase, ...sameOnEitherDatabase] : []),
          ],
          globalSetup: startsPostgres,
        },
      },
    ],
  },
});

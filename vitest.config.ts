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
 * Files of the second pass's scope whose subject does not depend on which PostgreSQL serves them:
 * the template pools' fairness is a matter of threads. The second pass leaves them to the first.
 */
const sameOnEitherDatabase = ['test/http/template-fairness.test.ts'];
/**
 * `.ci/run` sets POSTHORN_TEST_SECOND_PASS on its second `npm test`, against the PostgreSQL server.
 * What that pass runs: the API's reads and writes (test/http, test/db), which go through every SQL
 * module of the service, on the server (15) beside the embedded PostgreSQL (18) of the first pass.
 * The delivery, SMTP and process tests (test/delivery, test/smtp, test/e2e: SMTP sessions,
 * tarpits, crashes, subprocesses that start their own PostgreSQL, browsers) run once, in the first
 * pass: with them both passes took over 30 minutes of CI on the 2-core VM (17 + 16 minutes on
 * 2026-12-07). Anyone else's `npm test` runs everything once.
 */
const secondPass = process.env.POSTHORN_TEST_SECOND_PASS === '1';
const secondPassScope = ['test/http/**/*.test.ts', 'test/db/**/*.test.ts'];

/** Subprocesses, crashes, a browser: the first pass only (see secondPassScope). */
const e2eProject = {
  extends: true,
  test: {
    name: 'e2e',
    include: ['test/e2e/**/*.test.ts'],
    exclude: configDefaults.exclude,
    globalSetup: startsPostgres,
  },
};

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
      // no database: the first pass runs them
      ...(secondPass ? [] : [{ extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } }]),
      {
        extends: true,
        test: {
          name: 'integration',
          // test/http, test/smtp, and any new folder: a test lands here unless it is placed elsewhere
          include: secondPass ? secondPassScope : ['test/**/*.test.ts'],
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
      // the second pass leaves the subprocess, crash and browser tests to the first (secondPassScope)
      ...(secondPass ? [] : [e2eProject]),
    ],
  },
});

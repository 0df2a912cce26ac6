import { configDefaults, defineConfig } from 'vitest/config';

// starts one PostgreSQL for the run, shared by every project that lists it (see the file)
const startsPostgres = ['test/helpers/global-setup.ts'];

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
          exclude: [...configDefaults.exclude, 'test/unit/**', 'test/e2e/**', 'test/interop/**'],
          globalSetup: startsPostgres,
        },
      },
      {
        extends: true,
        test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: startsPostgres },
      },
    ],
  },
});

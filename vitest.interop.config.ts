import { defineConfig } from 'vitest/config';

/**
 * `npm run test:interop`: the tests that drive programs from Debian packages (swaks, with its Perl
 * TLS modules) against the real program. Not part of `npm test`, which needs nothing but npm;
 * `.ci/run` installs the packages and runs both.
 */
export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    include: ['test/interop/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});

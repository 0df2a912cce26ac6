import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    // tests that need a Debian package run in `npm run test:interop` (vitest.interop.config.ts)
    exclude: [...configDefaults.exclude, 'test/interop/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // XState's development build checks more (e.g. refuses to persist inline child logic); test with it.
    conditions: ['development'],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Crash tests spawn real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});

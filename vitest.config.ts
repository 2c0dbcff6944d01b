import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // XState's development build checks more (e.g. refuses to persist inline child logic); test with it.
    conditions: ['development'],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // The run's temp folder, and its PostgreSQL: TEST_DATABASE_URL, or a throwaway one it starts.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Crash tests spawn real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['control-plane/**/*.test.ts', 'media-worker/**/*.test.ts', 'shared/**/*.test.ts', 'test/**/*.test.ts', 'web/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // A failing test prints the logs of the stacks it ran (CI removes their folders).
    setupFiles: ['test/support/failure-logs.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Machines are shared and small: two files at a time, each with its own database.
    maxWorkers: 2,
    reporters: ['default'],
  },
});

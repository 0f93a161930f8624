import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: more workers only add contention between real servers and subprocesses.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});

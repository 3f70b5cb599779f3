import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // After the default output: one line per missing requirement (tool, Docker engine, root) and how many tests it
    // skipped. A command line --reporter replaces both; .ci/run names this one again.
    reporters: ['default', './test/support/skip-summary-reporter.ts'],
  },
});

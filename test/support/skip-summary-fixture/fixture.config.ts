// The config test/support/skip-summary.test.ts runs the fixture with: the fixture files only, and the same reporters
// as the project's vitest.config.ts.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('.', import.meta.url)),
    include: ['*.fixture.ts'],
    reporters: ['default', '../skip-summary-reporter.ts'],
  },
});

import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The arm64 and armhf packages under qemu (minutes, and slow enough to be starved beside other suites) run on
    // their own: `npm run test:emulated`, a step of .ci/run after `npm test`.
    exclude: process.env.KEYSTONE_EMULATED === '1' ? configDefaults.exclude : [...configDefaults.exclude, 'test/packaging/deb-emulated.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // After the default output: one line per missing requirement (tool, Docker engine, root) and how many tests it
    // skipped. A command line --reporter replaces both; .ci/run names this one again.
    reporters: ['default', './test/support/skip-summary-reporter.ts'],
  },
});

import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The arm64 and armhf packages under qemu (minutes, and slow enough to be starved beside other suites) run on
    // their own: `npm run test:emulated`, a step of .ci/run after `npm test`. So does the agent self-update
    // walkthrough (three packages, a container under systemd, two handovers): `npm run test:agent-update`.
    exclude: [
      ...configDefaults.exclude,
      ...(process.env.KEYSTONE_EMULATED === '1' ? [] : ['test/packaging/deb-emulated.test.ts']),
      ...(process.env.KEYSTONE_AGENT_UPDATE === '1' ? [] : ['test/packaging/agent-update-walkthrough.test.ts']),
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // After the default output: one line per missing requirement (tool, Docker engine, root) and how many tests it
    // skipped. A command line --reporter replaces both; .ci/run names this one again.
    reporters: ['default', './test/support/skip-summary-reporter.ts'],
  },
});

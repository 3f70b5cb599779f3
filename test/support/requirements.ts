// What a test suite needs from the machine (tools, a Docker engine, root): skip it with the reason when the machine
// lacks it, so `npm ci && npm test` passes on a fresh machine, and say so in the run's summary
// (test/support/skip-summary-reporter.ts). With KEYSTONE_TEST_STRICT=1 (CI) such a skip fails the run instead.
import { test } from 'vitest';
import { type Requirement, isStrict, markerOf, missingReason } from './requirement-checks.js';

export type { Requirement } from './requirement-checks.js';

/** skip: the suite cannot run here; title(name) appends a marker the summary reads, e.g. "ContainerRuntime [needs docker]". */
export function needs(...reqs: Requirement[]): {
  skip: boolean;
  reason: string | undefined;
  title(name: string): string;
} {
  const reasons = reqs.map((r) => missingReason(r)).filter((r): r is string => r !== undefined);
  const skip = reasons.length > 0;
  const reason = skip ? reasons.join('; ') : undefined;
  if (skip && isStrict()) failInStrictMode(reqs, reason!);
  return { skip, reason, title: (name) => `${name} ${markerOf(reqs)}` };
}

/**
 * Strictness that does not depend on a reporter (`--reporter=…` replaces the configured ones): a failing test,
 * registered where needs() was called, that every reporter shows with the reason. The skipped suite itself stays
 * skipped, so the summary still counts it.
 */
function failInStrictMode(reqs: Requirement[], reason: string): void {
  try {
    test(`${markerOf(reqs)} KEYSTONE_TEST_STRICT=1 forbids skipping`, () => {
      throw new Error(`KEYSTONE_TEST_STRICT=1 and this machine cannot run the suite: ${reason}`);
    });
  } catch {
    // Called outside a test file's collection (no suite to add to): throwing is then the only way to fail.
    throw new Error(`KEYSTONE_TEST_STRICT=1 and this machine cannot run the suite: ${reason}`);
  }
}

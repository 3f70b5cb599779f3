// A vitest reporter that ends the run with one line per missing requirement: how many tests it skipped and how to get
// it, e.g. "skipped 112 tests: no Docker engine answered (apt-get install docker.io, start dockerd)". It finds those
// tests by the "[needs …]" marker that needs() (test/support/requirements.ts) puts in a suite's or a test's title, so a
// newcomer sees at the end of `npm test` what did not run and why, instead of a green run that quietly tested less.
// Strictness (KEYSTONE_TEST_STRICT=1) does not depend on this reporter: needs() adds a failing test there.
import type { Reporter, TestModule, Vitest } from 'vitest/node';
import {
  type Requirement,
  REQUIREMENTS,
  STRICT_ENV,
  isStrict,
  missingReason,
  requirementsInTitle,
} from './requirement-checks.js';

/** The summary lines for these counts, in REQUIREMENTS order; the reason is asked of this machine (the same checks). */
export function summaryLines(skipped: ReadonlyMap<Requirement, number>, strict = isStrict()): string[] {
  const lines: string[] = [];
  for (const req of REQUIREMENTS) {
    const n = skipped.get(req);
    if (!n) continue;
    lines.push(`skipped ${n} ${n === 1 ? 'test' : 'tests'}: ${missingReason(req) ?? `needs ${req}`}`);
  }
  if (strict && lines.length > 0)
    lines.push(`${STRICT_ENV}=1: these skips fail the run (each needs() that skipped added a failing test)`);
  return lines;
}

/**
 * Per requirement missing here, the skipped tests that carry it in their full name (a suite's marker covers its tests).
 * A test that needs two missing things counts under both: installing one of them alone does not run it.
 */
export function countSkipped(modules: ReadonlyArray<TestModule>): Map<Requirement, number> {
  const counts = new Map<Requirement, number>();
  for (const mod of modules) {
    for (const test of mod.children.allTests()) {
      if (test.result().state !== 'skipped') continue;
      for (const req of requirementsInTitle(test.fullName)) {
        if (missingReason(req) === undefined) continue; // skipped for another reason: not this summary's business
        counts.set(req, (counts.get(req) ?? 0) + 1);
      }
    }
  }
  return counts;
}

export default class SkipSummaryReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const lines = summaryLines(countSkipped(modules));
    if (lines.length === 0) return;
    const log = (line: string) => (this.vitest ? this.vitest.logger.log(line) : console.log(line));
    log('');
    for (const line of lines) log(line);
  }
}

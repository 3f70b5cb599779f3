// One line of `keystone doctor`: which check, how it went, what was seen, and what to do about it.

/** The checks, in the order they are shown. Stable: scripts read `--json` by these ids. */
export const CHECK_IDS = [
  'settings',
  'node-version',
  'setpriv',
  'source',
  'state-dir',
  'disk-space',
  'trusted-keys',
  'trusted-files',
  'identity',
  'enrollment',
  'git-remote',
  'push-access',
  'plan',
  'first-revision',
  'run-users',
  'work-dir-reach',
  'container-engine',
  'clock',
] as const;

export type CheckId = (typeof CHECK_IDS)[number];

/**
 * `pass` and `fail` decide the exit code; `warn` is something to know that does not stop the agent (--allow-unsigned);
 * `skip` is a check that does not apply here (no Git source, nothing applied yet).
 */
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  check: CheckId;
  status: CheckStatus;
  /** What was seen, for people: a path, a version, a figure. */
  detail: string;
  /** What to do: for a failure always, for a warning when there is something. */
  fix?: string;
  /** The stable code of the failure, where the code that failed has one (KS_STATE_DIR_UNSAFE, KS_GIT_UNREACHABLE…). */
  code?: string;
}

export const pass = (check: CheckId, detail: string): CheckResult => ({ check, status: 'pass', detail });
export const skip = (check: CheckId, detail: string): CheckResult => ({ check, status: 'skip', detail });
export const warn = (check: CheckId, detail: string, fix?: string): CheckResult => ({
  check,
  status: 'warn',
  detail,
  ...(fix !== undefined && { fix }),
});
export const fail = (check: CheckId, detail: string, fix: string, code?: string): CheckResult => ({
  check,
  status: 'fail',
  detail,
  fix,
  ...(code !== undefined && { code }),
});

/** Whether the agent can run as checked: no check failed (warnings and skips do not count). */
export const allPassed = (results: readonly CheckResult[]): boolean => results.every((r) => r.status !== 'fail');

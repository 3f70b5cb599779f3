// Test instrumentation for crash consistency: KEYSTONE_CRASH_AT=<point> kills the agent with SIGKILL right there.

const target = process.env.KEYSTONE_CRASH_AT;

/** The places an apply can be interrupted; the crash-consistency test kills the agent at each. */
export type ApplyCrashPoint =
  | 'after-begin-apply'
  | 'after-stop'
  | 'after-install'
  | 'after-spawn'
  | 'after-start-record'
  | 'after-healthy'
  | 'before-finish-apply';

/**
 * After a restart: inside the health check of the instances the agent adopted, before anything is said about them
 * (SPEC §5). Reached only by an agent that adopted something, so it is not among the apply's points.
 */
export type AdoptionCrashPoint = 'adopted-health-wait';

export type CrashPoint = ApplyCrashPoint | AdoptionCrashPoint;

export const CRASH_POINTS: readonly ApplyCrashPoint[] = [
  'after-begin-apply',
  'after-stop',
  'after-install',
  'after-spawn',
  'after-start-record',
  'after-healthy',
  'before-finish-apply',
];

export const ADOPTION_CRASH_POINTS: readonly AdoptionCrashPoint[] = ['adopted-health-wait'];

/** No-op unless the environment names this point; then the agent dies as abruptly as a power cut allows. */
export function crashPoint(point: CrashPoint): void {
  if (target === point) process.kill(process.pid, 'SIGKILL');
}

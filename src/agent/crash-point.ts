// Test instrumentation for crash consistency: KEYSTONE_CRASH_AT=<point> kills the agent with SIGKILL right there.

const target = process.env.KEYSTONE_CRASH_AT;

/** The places an apply can be interrupted; the crash-consistency test kills the agent at each. */
export type CrashPoint = 'after-begin-apply' | 'after-stop' | 'after-install' | 'after-spawn' | 'after-start-record' | 'after-healthy' | 'before-finish-apply';

export const CRASH_POINTS: readonly CrashPoint[] = ['after-begin-apply', 'after-stop', 'after-install', 'after-spawn', 'after-start-record', 'after-healthy', 'before-finish-apply'];

/** No-op unless the environment names this point; then the agent dies as abruptly as a power cut allows. */
export function crashPoint(point: CrashPoint): void {
  if (target === point) process.kill(process.pid, 'SIGKILL');
}

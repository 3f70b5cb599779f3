// Test instrumentation for the switch (SPEC §17: "power loss at any moment of the switch leaves a working agent"):
// KEYSTONE_CRASH_AT=<point> kills the process with SIGKILL right there, as agent/crash-point.ts does for an apply.
// agent-rollback has its points too (rollback-after-current, rollback-after-failed).

/** The steps of a switch and of its end, in order. */
export const SWITCH_CRASH_POINTS = [
  'update-staged',
  'update-after-snapshot',
  'update-after-trial',
  'update-after-switch',
  'update-proven',
  'update-after-commit',
] as const;

export type SwitchCrashPoint = (typeof SWITCH_CRASH_POINTS)[number];

const target = process.env.KEYSTONE_CRASH_AT;

export function switchCrashPoint(point: SwitchCrashPoint): void {
  if (target === point) process.kill(process.pid, 'SIGKILL');
}

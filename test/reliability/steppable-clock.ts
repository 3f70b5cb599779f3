// A wall clock the test steps under a running agent, as NTP or `date -s` steps a device's: libfaketime preloaded into
// the agent reads its offset from a file on every clock call, so rewriting the file steps the clock at once. Only the
// wall clock moves: the monotonic clock (Node's timers, performance.now) runs on, as it does through a real step.
import { chmodSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { libfaketime } from '../support/requirement-checks.js';

export const DAY_S = 86_400;
export const YEAR_S = 365 * DAY_S;

export interface SteppableClock {
  /** The environment that gives a process this clock (LD_PRELOAD and libfaketime's settings). */
  env: Record<string, string>;
  /** Sets the offset from the real wall clock, in seconds (negative: behind); takes effect at the next clock call. */
  step(offsetSeconds: number): void;
  /** The offset in force. */
  offset(): number;
  cleanup(): void;
}

export function steppableClock(): SteppableClock {
  const lib = libfaketime();
  if (!lib) throw new Error('libfaketime.so.1 is not installed (apt-get install faketime)');
  // Readable by anyone: the agent may hand the variables on to a process of another user.
  const dir = mkdtempSync(join(tmpdir(), 'keystone-clock-'));
  chmodSync(dir, 0o755);
  const file = join(dir, 'faketimerc');
  let current = 0;
  const clock: SteppableClock = {
    env: {
      LD_PRELOAD: lib,
      FAKETIME_TIMESTAMP_FILE: file,
      // Read the file on every call (libfaketime caches it for 10 s otherwise): a step is seen at once.
      FAKETIME_NO_CACHE: '1',
      // A real clock step leaves CLOCK_MONOTONIC alone: timers must not jump with it.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
      // File times are the file system's, not the clock's.
      NO_FAKE_STAT: '1',
    },
    step(offsetSeconds) {
      // libfaketime's relative form: "+N" / "-N" seconds from the real clock, running at real speed. Renamed into
      // place: a reader never sees a half-written file (which it would take for no offset at all).
      writeFileSync(`${file}.tmp`, `${offsetSeconds >= 0 ? '+' : ''}${Math.trunc(offsetSeconds)}\n`, { mode: 0o644 });
      renameSync(`${file}.tmp`, file);
      current = offsetSeconds;
    },
    offset: () => current,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
  clock.step(0);
  return clock;
}

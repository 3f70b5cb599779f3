// `--wait` and `--timeout` of the commands that wait for the agent's answer (restart, stop, start, sync). Apart from
// agent-client.ts so that a command that does not wait (status) does not load it.
import { formatDuration, parseDuration } from '../core/duration.js';
import { UsageError } from './io.js';

/** Past the agent's own timeout, how long the client still waits for its answer (the 504 with the states). */
export const ANSWER_MARGIN_MS = 30_000;

export type WaitFor = 'health' | 'started' | 'none';

/** `--wait` and `--timeout` checked, the timeout Go-style as the API echoes it (`2m` → `2m0s`). */
export function parseWaitArgs(values: { wait?: string | undefined; timeout: string }): {
  wait: WaitFor;
  timeoutMs: number;
  timeout: string;
} {
  const wait = values.wait ?? 'health';
  if (wait !== 'health' && wait !== 'started' && wait !== 'none')
    throw new UsageError(`--wait must be health, started or none, not "${wait}"`);
  const timeoutMs = parseDuration(values.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0)
    throw new UsageError(`--timeout takes a duration such as 2m or 90s, not "${values.timeout}"`);
  return { wait, timeoutMs, timeout: formatDuration(timeoutMs) };
}

// Short-lived commands (install scripts, cmd: probes) run in their own process group, so a timeout or an abort
// kills everything they started, and nothing they left in the background outlives them.
import { spawn, type StdioOptions } from 'node:child_process';
import { killGroup, type PollClock } from './process-group.js';
import { processStartTime } from './proc-identity.js';

/** How to run one command line. */
export interface GroupRunOptions {
  cwd: string;
  env: Record<string, string>;
  /** stdout and stderr: file descriptors (e.g. the component's logs) or 'pipe' to capture. */
  stdout: number | 'pipe' | 'ignore';
  stderr: number | 'pipe' | 'ignore';
  /** Kills the group after this many milliseconds (undefined: no limit). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Bytes of piped output kept (the last ones). Default 4096. */
  captureBytes?: number;
  clock?: PollClock;
}

/** How it ended. `spawnError` is set when the command could not be started at all. */
export interface GroupRunResult {
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  stdout: string;
  stderr: string;
  spawnError?: Error;
}

/** Runs `argv` detached (its own session and group), kills the group at the timeout or on abort, and sweeps it after exit. */
export function runInGroup(argv: readonly string[], opts: GroupRunOptions): Promise<GroupRunResult> {
  const [file, ...args] = argv;
  if (file === undefined) throw new TypeError('runInGroup: empty argv');
  const limit = opts.captureBytes ?? 4096;
  return new Promise<GroupRunResult>((resolvePromise) => {
    const out = { stdout: '', stderr: '' };
    let timedOut = false;
    let aborted = false;
    let settled = false;
    const stdio: StdioOptions = ['ignore', opts.stdout, opts.stderr];
    const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio, detached: true });
    const pid = child.pid;
    const startTime = pid === undefined ? undefined : processStartTime(pid);
    const capture = (key: 'stdout' | 'stderr') => (chunk: Buffer) => {
      out[key] = (out[key] + chunk.toString('utf8')).slice(-limit);
    };
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    child.stdout?.on('data', capture('stdout'));
    child.stderr?.on('data', capture('stderr'));

    const kill = () => {
      if (pid !== undefined && startTime !== undefined) void killGroup(pid, startTime, { clock: opts.clock });
    };
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            kill();
          }, opts.timeoutMs);
    const onAbort = () => {
      aborted = true;
      kill();
    };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (r: Omit<GroupRunResult, 'timedOut' | 'aborted' | 'stdout' | 'stderr'>) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolvePromise({ ...r, timedOut, aborted, ...out });
    };
    child.once('error', (err) => {
      if (pid === undefined) finish({ code: null, signal: null, spawnError: err });
    });
    child.once('exit', (code, signal) => {
      void (async () => {
        // Whatever the command left running in its group dies with it.
        if (pid !== undefined && startTime !== undefined) await killGroup(pid, startTime, { clock: opts.clock });
        // Let piped output that is already written arrive, but never wait on a holder that escaped the group.
        if (child.stdout || child.stderr) {
          let t: NodeJS.Timeout | undefined;
          await Promise.race([closed, new Promise<void>((r) => (t = setTimeout(r, 200)))]);
          clearTimeout(t);
        }
        finish({ code, signal });
      })();
    });
  });
}

// Runs a long keystonectl command (logs --follow) in-process while the test watches its output grow, and stops it
// with the AbortSignal that `logs` takes in its io.
import { main } from '../../../src/cli/keystonectl.js';
import type { LogsIo } from '../../../src/cli/commands/logs.js';
import type { CliResult } from '../../support/cli-run.js';

export interface LiveRun {
  stdout(): string;
  stderr(): string;
  /** Polls (with a deadline) until stdout satisfies `cond`. */
  until(cond: (stdout: string) => boolean, what: string, ms?: number): Promise<void>;
  /** Aborts the command and resolves with its result. */
  stop(): Promise<CliResult>;
}

export function startCtl(args: string[], extra: Partial<LogsIo> = {}): LiveRun {
  let out = '';
  let err = '';
  const abort = new AbortController();
  const io: LogsIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    cwd: '/',
    env: {},
    signal: abort.signal,
    followPollMs: 20,
    ...extra,
  };
  const done = main(args, io);
  return {
    stdout: () => out,
    stderr: () => err,
    async until(cond, what, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!cond(out)) {
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${what}; stdout so far:\n${out}\nstderr:\n${err}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      abort.abort();
      const code = await done;
      return { code, stdout: out, stderr: err };
    },
  };
}

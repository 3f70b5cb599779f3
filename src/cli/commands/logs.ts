// `keystonectl logs NAME`: a component's output, read straight from the state directory (the agent and keystonectl
// share the device; GET /v1/logs/{name} is the same through the agent). `--follow` polls the file size and survives rotation.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { STDERR_LOG, STDOUT_LOG, tailLines } from '../../runtime/log-files.js';
import { componentDir, componentPaths, LOGS_DIR, WORK_DIR } from '../../state-dir/layout.js';
import { followLog, lastCompleteLines, unreadable, type FollowOptions } from '../../runtime/log-follow.js';
import { componentArg } from '../component-arg.js';
import { stateDirOf } from '../agent-token.js';
import { EXIT, UsageError, type CliIo } from '../io.js';

export const LOGS_USAGE = 'keystonectl logs NAME [--follow] [--lines 50] [--stderr] [--state-dir /var/lib/keystone]';

/** What `logs --follow` adds to the io: a way to stop other than SIGINT, and the poll interval (both for tests). */
export interface LogsIo extends CliIo {
  /** Stops following; without it, SIGINT or SIGTERM does. */
  signal?: AbortSignal;
  /** How often the file size is checked; default 250 ms. */
  followPollMs?: number;
}

const DEFAULT_POLL_MS = 250;

export async function logs(argv: string[], io: LogsIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      follow: { type: 'boolean', short: 'f', default: false },
      lines: { type: 'string', short: 'n', default: '50' },
      stderr: { type: 'boolean', default: false },
      'state-dir': { type: 'string' },
    },
  });
  const name = componentArg(positionals, 'logs');
  const lines = Number(values.lines);
  if (!Number.isInteger(lines) || lines < 0)
    throw new UsageError(`--lines must be a whole number ≥ 0, not "${values.lines}"`);
  const stateDir = stateDirOf(values, io);
  // componentPaths() of state-dir/layout.ts, without loading the agent (and SQLite) into the CLI.
  const { logDir } = componentPaths(stateDir, name);
  const path = join(logDir, values.stderr ? STDERR_LOG : STDOUT_LOG);

  // 1. A component this device has never run has no directory: bad input, not an empty log.
  try {
    await stat(logDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw unreadable(logDir, e);
    // A composite (or replicas) has no log of its own: its members do, one directory each under its name.
    const members = await readdir(componentDir(stateDir, name), { withFileTypes: true }).catch(() => []);
    const named = members
      .filter((d) => d.isDirectory() && d.name !== WORK_DIR && d.name !== LOGS_DIR)
      .map((d) => `${name}/${d.name}`);
    if (named.length)
      io.stderr.write(
        `keystonectl logs: ${name} has no log of its own: its members do (${named.sort().join(', ')}); e.g. keystonectl logs ${named[0]}\n`,
      );
    else
      io.stderr.write(
        `keystonectl logs: no component "${name}" on this device (no ${logDir}; --state-dir is ${stateDir})\n`,
      );
    return EXIT.BAD_INPUT;
  }

  // 2. The last lines; following starts right after the last complete one.
  if (!values.follow) {
    const tail = await tailLines(path, lines).catch((e: unknown) => {
      throw unreadable(path, e);
    });
    if (tail.length) io.stdout.write(tail.join('\n') + '\n');
    return EXIT.OK;
  }
  const start = await lastCompleteLines(path, lines);
  if (start.lines.length) io.stdout.write(start.lines.join('\n') + '\n');
  await follow(path, start.end, start.before, io);
  return EXIT.OK;
}

/** Prints what is appended until io.signal, or SIGINT/SIGTERM without one. */
async function follow(path: string, offset: number, before: FollowOptions['before'], io: LogsIo): Promise<void> {
  const stopper = new AbortController();
  const onSignal = () => stopper.abort();
  if (io.signal) io.signal.addEventListener('abort', onSignal, { once: true });
  else {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  if (io.signal?.aborted) stopper.abort();
  try {
    await followLog(path, offset, {
      ...(before && { before }),
      signal: stopper.signal,
      pollMs: io.followPollMs ?? DEFAULT_POLL_MS,
      onText: (t) => io.stdout.write(t),
    });
  } finally {
    io.signal?.removeEventListener('abort', onSignal);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

// The agent as a child process: `node bin/keystone.js agent …` in its own process group, its JSON log parsed as it
// comes, waiting for a log line, its components' pids and its stop.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { KEYSTONE_BIN, projectDir } from './paths.js';
import { signalGroup, signalPid } from './processes.js';
import { epochNow } from './stats.js';

/** One line of the agent's JSON log, with `recv` (when the bench read it) and `t` (its `time`, epoch ms). */
export interface AgentEvent {
  msg?: string;
  time?: string;
  component?: string;
  state?: string;
  pid?: number;
  unparsed?: boolean;
  recv: number;
  t: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the log's fields are whatever the agent logs
  [field: string]: any;
}

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartAgentOptions {
  repo?: string;
  gitRepo?: string;
  plan: string;
  stateDir: string;
  concurrency?: number | undefined;
  extraArgs?: string[];
  env?: NodeJS.ProcessEnv;
  nodeArgs?: string[];
  trustArgs?: string[];
  program?: string;
  launcher?: string | undefined;
}

export interface Agent {
  child: ChildProcess;
  pid: number;
  events: AgentEvent[];
  exited: Promise<AgentExit>;
  readonly stderr: string;
  /** Resolves with the first event matching `pred` (from the start of the log); rejects on timeout or agent exit. */
  waitFor(pred: (e: AgentEvent, i: number) => unknown, timeoutMs: number, what?: string): Promise<AgentEvent>;
  /** Every pid the agent logged for a component (state=starting), for the clean-up. */
  componentPids(): number[];
  /** SIGTERM (with --stop-on-exit it stops its components), SIGKILL to its group after `graceMs`. */
  stop(graceMs?: number): Promise<AgentExit>;
}

/**
 * `node bin/keystone.js agent --dir REPO --plan PLAN --allow-unsigned --state-dir STATE --log-format json
 * --stop-on-exit [--concurrency N]`, in its own process group. Every JSON log line lands in `events` with `t`
 * (its own `time`, epoch ms) and `recv` (when the bench read it). With `gitRepo` (a URL or path) it follows Git
 * (`--repo gitRepo` instead of `--dir repo`); `trustArgs` (e.g. ['--trusted-key', FILE]) replaces `--allow-unsigned`;
 * `program` is the entry run (bin/keystone.js); `launcher` (a shell script, e.g. packaging/launchers/keystone) runs it
 * instead of node, as the package does: it execs node, so `pid` is still the agent's (the footprint bench).
 */
export function startAgent({
  repo,
  gitRepo,
  plan,
  stateDir,
  concurrency,
  extraArgs = [],
  env = process.env,
  nodeArgs = [],
  trustArgs = ['--allow-unsigned'],
  program = KEYSTONE_BIN,
  launcher,
}: StartAgentOptions): Agent {
  const source = gitRepo !== undefined ? ['--repo', gitRepo] : ['--dir', repo!];
  // The components run as an unprivileged user, who must be able to reach their work directories: the benches keep
  // their state inside a mkdtemp directory (0700), which the agent would refuse (KS_WORK_DIR_UNREACHABLE).
  mkdirSync(dirname(stateDir), { recursive: true });
  chmodSync(dirname(stateDir), 0o755);
  const args = [
    'agent',
    ...source,
    '--plan',
    plan,
    ...trustArgs,
    '--state-dir',
    stateDir,
    '--log-format',
    'json',
    '--stop-on-exit',
  ];
  if (concurrency !== undefined) args.push('--concurrency', String(concurrency));
  args.push(...extraArgs);
  const [command, argv]: [string, string[]] = launcher
    ? ['/bin/sh', [launcher, ...args]]
    : [process.execPath, [...nodeArgs, program, ...args]];
  const child = spawn(command, argv, { cwd: projectDir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const events: AgentEvent[] = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  let exit: AgentExit | undefined;
  const exited = new Promise<AgentExit>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      for (const l of [...listeners]) l();
      resolve(exit);
    }),
  );
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20000)));
  createInterface({ input: child.stdout }).on('line', (line) => {
    let rec: AgentEvent;
    try {
      rec = JSON.parse(line);
    } catch {
      rec = { msg: line, unparsed: true } as AgentEvent;
    }
    rec.recv = epochNow();
    rec.t = rec.time ? Date.parse(rec.time) : rec.recv;
    events.push(rec);
    for (const l of [...listeners]) l();
  });

  const agent: Agent = {
    child,
    pid: child.pid!,
    events,
    exited,
    get stderr() {
      return stderr;
    },
    waitFor(pred, timeoutMs, what = 'a log line') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = events.find(pred);
          if (hit) return done(() => resolve(hit));
          if (exit)
            done(() =>
              reject(
                new Error(
                  `the agent exited (${exit!.signal ?? exit!.code}) before ${what}; stderr: ${stderr.slice(-2000)}`,
                ),
              ),
            );
        };
        const done = (fn: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          fn();
        };
        const last = () =>
          events
            .slice(-3)
            .map((e) => e.msg ?? `${e.component} ${e.state ?? ''}`)
            .join(' | ');
        const timer = setTimeout(
          () => done(() => reject(new Error(`no ${what} within ${timeoutMs} ms (last log lines: ${last()})`))),
          timeoutMs,
        );
        listeners.add(check);
        check();
      });
    },
    componentPids() {
      return events.filter((e) => e.component && Number.isInteger(e.pid)).map((e) => e.pid!);
    },
    async stop(graceMs = 60_000) {
      if (exit) return exit;
      signalPid(child.pid!, 'SIGTERM');
      const t = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
  return agent;
}

// Runs the real agent (`node bin/keystone.js agent … --log-format json`) as a child process, so that kill -9 is
// real: collects its JSON log lines, waits on them with deadlines, reads its state store read-only, inspects the
// component processes through /proc, and kills every process a test started when the test ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { readProcStat, type ProcStat } from '../../src/runtime/proc-identity.js';
import { revisionFromRow } from '../../src/store/applied-revision.js';
import { historyFromRow } from '../../src/store/apply-history.js';
import { componentFromRow } from '../../src/store/component-records.js';
import { RowReader, type Row } from '../../src/store/row-reader.js';
import {
  STATE_DB_FILE,
  type AppliedRevision,
  type ComponentRecord,
  type HistoryEntry,
} from '../../src/store/state-store.js';
import { PROJECT_ROOT } from './example-repo.js';

/** One line of the agent's pino output (level, ISO time, module, msg and the structured fields). */
export interface LogLine {
  level: number;
  time: string;
  /** `time` in ms since the epoch. */
  t: number;
  module?: string;
  msg?: string;
  component?: string;
  state?: string;
  revision?: string;
  reason?: string;
  pid?: number;
  [key: string]: unknown;
}

export type LogPredicate = (l: LogLine) => boolean;

/** Predicates for the lines of SPEC §11. */
export const is = {
  msg:
    (text: string): LogPredicate =>
    (l) =>
      l.msg === text,
  msgIncludes:
    (text: string): LogPredicate =>
    (l) =>
      typeof l.msg === 'string' && l.msg.includes(text),
  state:
    (component: string, state: string): LogPredicate =>
    (l) =>
      l.component === component && l.state === state,
  about:
    (component: string, msg: string): LogPredicate =>
    (l) =>
      l.component === component && l.msg === msg,
  revision:
    (revision: string, msg: string): LogPredicate =>
    (l) =>
      l.revision === revision && l.msg === msg,
  /** The end of an apply: every way outcomes.ts reports one, and the resume of the revision a restarted agent runs. */
  applyEnd: (l: LogLine): boolean =>
    l.msg === 'all components running' ||
    l.msg === 'apply finished' ||
    (typeof l.msg === 'string' &&
      (l.msg.startsWith('apply failed') || l.msg.startsWith('resumed the revision applied last'))),
};

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartOptions {
  /** A plain directory to follow (`--dir`). Give this or `repo`. */
  dir?: string;
  /** A Git remote URL or repository path to follow (`--repo`) instead of a directory. */
  repo?: string;
  /** `--plan`; undefined: the agent takes its plan from fleet.toml. */
  plan: string | undefined;
  trustArgs: string[];
  /** Extra flags (they may repeat defaults: parseArgs keeps the last). */
  args?: string[];
  /** Extra environment (KEYSTONE_CRASH_AT …). */
  env?: Record<string, string>;
}

/**
 * What runs: dist/ through bin/keystone.js, or with KEYSTONE_TEST_BUNDLE=1 the package's bundle (`npm run bundle`
 * writes dist-bundle/), which .ci/run runs a set of the agent's suites against.
 */
const KEYSTONE_BIN =
  process.env.KEYSTONE_TEST_BUNDLE === '1'
    ? join(PROJECT_ROOT, 'dist-bundle', 'keystone.mjs')
    : join(PROJECT_ROOT, 'bin', 'keystone.js');

/** A running agent process and what it has logged so far. */
export class AgentProcess {
  readonly logs: LogLine[] = [];
  /** Lines that were not JSON (there should be none on stdout). */
  readonly rawLines: string[] = [];
  stderr = '';
  exit?: AgentExit;
  readonly exited: Promise<AgentExit>;
  private buffered = '';
  private readonly waiters = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => this.take(chunk));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        this.wake();
        resolve(this.exit);
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  private take(chunk: string): void {
    // KEYSTONE_HARNESS_LOG=FILE keeps every agent's log of a run, to read (or quote) after it.
    if (process.env.KEYSTONE_HARNESS_LOG) appendFileSync(process.env.KEYSTONE_HARNESS_LOG, chunk);
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const text = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      if (!text.trim()) continue;
      try {
        const rec = JSON.parse(text) as LogLine;
        rec.t = Date.parse(rec.time);
        this.logs.push(rec);
      } catch {
        this.rawLines.push(text);
      }
    }
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** The index the next line will have: pass it as `after` to look only at what comes next. */
  mark(): number {
    return this.logs.length;
  }

  /** Lines from index `after` on that satisfy `pred`. */
  lines(pred: LogPredicate = () => true, after = 0): LogLine[] {
    return this.logs.slice(after).filter(pred);
  }

  /**
   * The first line at index ≥ `after` that satisfies `pred`; rejects at the deadline (or when the agent exits
   * first) with the agent's last lines, so a failing test shows what the agent was doing.
   */
  waitForLog(pred: LogPredicate, deadlineMs = 15_000, after = 0, what = 'a log line'): Promise<LogLine> {
    const deadline = Date.now() + deadlineMs;
    let scanned = after;
    return new Promise<LogLine>((resolve, reject) => {
      const check = () => {
        for (; scanned < this.logs.length; scanned++) {
          const l = this.logs[scanned]!;
          if (pred(l)) return done(() => resolve(l));
        }
        if (this.exit)
          return done(() =>
            reject(new Error(`the agent exited (${JSON.stringify(this.exit)}) before ${what}\n${this.tail()}`)),
          );
        if (Date.now() >= deadline)
          return done(() => reject(new Error(`timed out after ${deadlineMs} ms waiting for ${what}\n${this.tail()}`)));
      };
      const timer = setInterval(check, 50);
      const done = (settle: () => void) => {
        clearInterval(timer);
        this.waiters.delete(check);
        settle();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Resolves when the agent has exited; rejects at the deadline. */
  async waitForExit(deadlineMs = 15_000): Promise<AgentExit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the agent did not exit within ${deadlineMs} ms\n${this.tail()}`)),
        deadlineMs,
      );
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** kill -9 of the agent alone (its components run in their own sessions and must survive it). */
  async kill9(): Promise<AgentExit> {
    if (!this.exit) this.child.kill('SIGKILL');
    return this.waitForExit(5_000);
  }

  /** SIGTERM and wait: the agent detaches (or, with --stop-on-exit, stops its components) and exits. */
  async stop(deadlineMs = 20_000): Promise<AgentExit> {
    if (!this.exit) this.child.kill('SIGTERM');
    return this.waitForExit(deadlineMs);
  }

  tail(n = 40): string {
    const lines = this.logs.slice(-n).map((l) => {
      const { level: _l, time, t: _t, module, msg, ...rest } = l;
      return `${time} [${module ?? '?'}] ${msg ?? ''} ${JSON.stringify(rest)}`;
    });
    return [...lines, ...(this.stderr ? [`stderr: ${this.stderr.slice(-2000)}`] : [])].join('\n');
  }
}

/** A process seen in /proc. */
export interface ProcInfo {
  pid: number;
  cwd: string;
  argv: string[];
  stat: ProcStat;
}

/** Live (non-zombie) processes whose working directory is `dir` or inside it. */
export function processesUnder(dir: string): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue;
    }
    if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
    const stat = readProcStat(pid);
    if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
    let argv: string[] = [];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    out.push({ pid, cwd, argv, stat });
  }
  return out;
}

/** Sends `signal` to a pid or group, ignoring one that is gone. */
function trySignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    /* gone already */
  }
}

/**
 * One test's agent world: a fresh state directory, the agents started on it, read-only views of its store and
 * of its processes, and a cleanup that leaves no process behind.
 */
export class AgentHarness {
  readonly stateDir: string;
  readonly agents: AgentProcess[] = [];
  /** Every component instance ever seen in the store (pid → start time), for the cleanup. */
  private readonly seen = new Map<number, string>();

  constructor() {
    this.stateDir = mkdtempSync(join(tmpdir(), 'keystone-agent-state-'));
  }

  /** Starts `keystone agent` on the fixture (a directory or a Git repository) with the test knobs (fast settle, short backoff cap, short grace). */
  start(opts: StartOptions): AgentProcess {
    if ((opts.dir === undefined) === (opts.repo === undefined))
      throw new Error('AgentHarness.start: give exactly one of dir and repo');
    // --settle is the directory watcher's; a Git source has nothing to settle.
    const source = opts.repo !== undefined ? ['--repo', opts.repo] : ['--dir', opts.dir!, '--settle', '100ms'];
    const args = [
      KEYSTONE_BIN,
      'agent',
      ...source,
      ...(opts.plan !== undefined ? ['--plan', opts.plan] : []),
      '--state-dir',
      this.stateDir,
      '--log-format',
      'json',
      '--max-backoff',
      '800ms',
      '--grace',
      '3s',
      // Many agents run at once in the tests: none takes the default API port.
      '--listen',
      'none',
      ...opts.trustArgs,
      ...(opts.args ?? []),
    ];
    const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env };
    if (!opts.env?.KEYSTONE_CRASH_AT) delete env.KEYSTONE_CRASH_AT;
    // Its own process group, so that the cleanup can reach anything the agent itself has in flight.
    const child = spawn(process.execPath, args, {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const agent = new AgentProcess(child);
    this.agents.push(agent);
    return agent;
  }

  /** The store's component records, read through a read-only connection (the agent may be running). */
  components(): ComponentRecord[] {
    return this.read((db, rows) =>
      (db.prepare('SELECT * FROM components ORDER BY position, name').all() as Row[]).map((r) =>
        componentFromRow(rows, r),
      ),
    );
  }

  component(name: string): ComponentRecord | undefined {
    return this.components().find((c) => c.name === name);
  }

  /** Newest first. */
  history(): HistoryEntry[] {
    return this.read((db, rows) =>
      (db.prepare('SELECT * FROM applies ORDER BY id DESC').all() as Row[]).map((r) => historyFromRow(rows, r)),
    );
  }

  appliedRevision(): AppliedRevision | undefined {
    return this.read((db, rows) => {
      const r = db.prepare('SELECT * FROM applied_revision WHERE slot = 1').get() as Row | undefined;
      return r && revisionFromRow(rows, r);
    });
  }

  /** name → recorded pid, for every component with a process instance. */
  pidsOf(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of this.components()) if (c.instance?.kind === 'process') out[c.name] = c.instance.pid;
    return out;
  }

  workDir(name: string): string {
    return join(this.stateDir, 'components', name, 'work');
  }

  /** Live processes working in the component's work directory (its instance and anything it forked, plus probes). */
  processesOf(name: string): ProcInfo[] {
    return processesUnder(this.workDir(name));
  }

  /** Every live process working inside the state directory. */
  processes(): ProcInfo[] {
    return processesUnder(this.stateDir);
  }

  private read<T>(fn: (db: Sqlite.Database, rows: RowReader) => T): T {
    const file = join(this.stateDir, STATE_DB_FILE);
    const db = new Sqlite(file, { readonly: true, fileMustExist: true, timeout: 5_000 });
    try {
      const v = fn(db, new RowReader(file));
      if (Array.isArray(v))
        for (const c of v as Array<Partial<ComponentRecord>>)
          if (c?.instance?.kind === 'process') this.seen.set(c.instance.pid, c.instance.startTime);
      return v;
    } finally {
      db.close();
    }
  }

  /**
   * Kills every agent (its whole group) and every component process: the groups of the pids the store recorded
   * (when they are still those processes) and of every process working inside the state directory, until none
   * is left; then removes the state directory.
   */
  async cleanup(): Promise<void> {
    for (const a of this.agents) if (!a.exit) trySignal(-a.pid, 'SIGKILL');
    await Promise.all(this.agents.map((a) => a.exited));
    try {
      this.components();
    } catch {
      /* no store (the agent never got that far) */
    }
    for (const [pid, startTime] of this.seen)
      if (readProcStat(pid)?.startTime === startTime) trySignal(-pid, 'SIGKILL');
    const deadline = Date.now() + 5_000;
    for (;;) {
      const left = this.processes();
      if (left.length === 0) break;
      if (Date.now() > deadline)
        throw new Error(
          `processes survived the cleanup: ${left.map((p) => `${p.pid} ${p.argv.join(' ')}`).join('; ')}`,
        );
      for (const p of left) {
        trySignal(-p.stat.pgrp, 'SIGKILL');
        trySignal(p.pid, 'SIGKILL');
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

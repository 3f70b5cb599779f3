// Issue 17: the npm scripts as a new user runs them. A SIGINT or SIGTERM sent to the npm process alone must reach the
// program the script runs (npm forwards both to its child, but a shell in between used to swallow them: the agent and
// its stack, or the Git server, kept running), and Ctrl-C on a terminal (SIGINT to npm and the program at once) must
// still stop the agent cleanly: one signal from the terminal plus one forwarded by npm must not kill it half-way
// through stopping its stack. `npm start` runs the agent under a shell that forwards one SIGTERM; `npm run git-server`
// execs the server.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSameProcess, readProcStat } from '../../src/runtime/proc-identity.js';
import { processesUnder } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { stackFixture } from '../support/stack-fixture.js';

interface Run {
  child: ChildProcess;
  out(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** `npm ARGS` in the project, in a process group of its own (the cleanup kills the group, never the test's). */
function npm(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn('npm', args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (out += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  cleanups.push(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  });
  return { child, out: () => out, exited };
}

/** Polls `probe` until it returns a value; fails at the deadline with `what` and the output so far. */
async function until<T>(probe: () => T | undefined, what: string, run: Run, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output so far:\n${run.out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The live processes under `pid` (children, grandchildren…), from /proc. */
function descendantsOf(pid: number): Array<{ pid: number; startTime: string; comm: string }> {
  const all = readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map((n) => readProcStat(Number(n)))
    .filter((st) => st !== undefined && st.state !== 'Z');
  const out: Array<{ pid: number; startTime: string; comm: string }> = [];
  const parents = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const st of all) {
      if (!parents.has(st!.ppid) || parents.has(st!.pid)) continue;
      parents.add(st!.pid);
      out.push({ pid: st!.pid, startTime: st!.startTime, comm: st!.comm });
      grew = true;
    }
  }
  return out;
}

/** The node program npm runs for the script (the agent's components are node-free shells here). */
async function programOf(run: Run, ready: (out: string) => boolean): Promise<{ pid: number; startTime: string }> {
  await until(() => (ready(run.out()) ? true : undefined), 'the program to be ready', run, 120_000);
  const nodes = descendantsOf(run.child.pid!).filter((p) => p.comm === 'node');
  expect(nodes).toHaveLength(1);
  return nodes[0]!;
}

/** Two components that each take a second to stop (a trap on SIGTERM), b hard on a: an agent that dies half-way leaves a running. */
const slowStop = (name: string, dependencies: Array<{ component: string; type: 'hard' }> = []) => ({
  name,
  version: '1.0.0',
  command: 'sh',
  args: ['-c', "trap 'sleep 1; exit 0' TERM; while :; do sleep 0.1; done"],
  dependencies,
});

// One at a time: each runs `npm run build` first, and builds of one tree must not race each other.
describe('npm scripts stop with the npm process', { timeout: 180_000 }, () => {
  const cases = [
    { signal: 'SIGINT', to: 'npm' },
    { signal: 'SIGTERM', to: 'npm' },
    // Ctrl-C on a terminal: the whole foreground process group.
    { signal: 'SIGINT', to: 'group' },
  ] as const;
  for (const { signal, to } of cases) {
    it(`npm start: ${signal} to ${to === 'npm' ? 'the npm process alone' : "npm's whole process group (Ctrl-C)"} stops the agent cleanly, and --stop-on-exit its stack`, async () => {
      const fx = await stackFixture({
        components: () => [slowStop('a'), slowStop('b', [{ component: 'a', type: 'hard' }])],
      });
      const stateDir = mkdtempSync(join(tmpdir(), 'keystone-npm-start-'));
      cleanups.push(() => {
        fx.cleanup();
        rmSync(stateDir, { recursive: true, force: true });
      });
      // The script's own flags first, then these (the last of a repeated flag wins): the fixture instead of the
      // example (whose fixed ports other tests may hold), no API port, JSON lines to read.
      const run = npm(['start', '--', '--dir', fx.dir, '--plan', fx.plan, '--listen', 'none', '--log-format', 'json'], {
        KEYSTONE_STATE_DIR: stateDir,
      });
      const agent = await programOf(run, (o) => o.includes('"all components running"'));
      expect(processesUnder(stateDir).length).toBeGreaterThan(0);

      process.kill(to === 'npm' ? run.child.pid! : -run.child.pid!, signal);
      const exit = await Promise.race([run.exited, until(() => undefined, 'npm to exit', run, 30_000)]);
      expect(exit, run.out()).toEqual({ code: 0, signal: null });
      expect(isSameProcess(agent.pid, agent.startTime)).toBe(false);
      expect(run.out()).toContain('stopping: components are stopped too (--stop-on-exit)');
      // Both stopped by the agent, dependent first: it lived through the whole stop.
      const stops = run
        .out()
        .split('\n')
        .filter((l) => l.includes('"state":"stopping"'))
        .map((l) => (JSON.parse(l) as { component: string }).component);
      expect(stops).toEqual(['b', 'a']);
      expect(processesUnder(stateDir)).toEqual([]);
    });
  }

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`npm run git-server: ${signal} to the npm process alone stops the server`, async () => {
      const root = mkdtempSync(join(tmpdir(), 'keystone-npm-git-'));
      cleanups.push(() => rmSync(root, { recursive: true, force: true }));
      const run = npm(['run', 'git-server', '--', root, '--port', '0']);
      const server = await programOf(run, (o) => o.includes('Ctrl-C stops'));
      const port = Number(/127\.0\.0\.1:(\d+)\//.exec(run.out())?.[1]);
      expect((await fetch(`http://127.0.0.1:${port}/nothing.git/info/refs?service=git-upload-pack`)).status).toBe(404);

      process.kill(run.child.pid!, signal);
      const exit = await Promise.race([run.exited, until(() => undefined, 'npm to exit', run, 30_000)]);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(isSameProcess(server.pid, server.startTime)).toBe(false);
      await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
    });
  }
});

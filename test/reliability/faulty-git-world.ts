// One device following a branch through the faulty proxy: a repository on the real Git server (git http-backend),
// the proxy in front of it, and the real agent (`keystone agent --repo <proxy URL>`, polling every second) running two
// plain processes from it. Commits are pushed to the server directly, so a fault only ever hits what the device reads.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { startFaultyGitProxy, type FaultyGitProxy } from '../support/faulty-git-proxy.js';
import { gitIn } from '../support/git-env.js';
import type { GitHttpServer } from '../support/git-http-server.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

/** How the agent reports a failed look (agent-git.ts): with the error's code. */
export const LOOK_FAILED = 'cannot reach the Git source: keeping what runs, retrying';

export interface FaultyGitWorld {
  fx: StackFixture;
  h: AgentHarness;
  /** The agent now running (replaced by restart()). */
  agent: AgentProcess;
  proxy: FaultyGitProxy;
  /** The commit applied at start. */
  first: string;
  /** Bumps app's version, commits and pushes to the server (not through the proxy); returns the commit id. */
  pushVersion(version: string): Promise<string>;
  /** Stops the agent (its components keep running, to be adopted) and starts another on the same state directory. */
  restart(opts?: { before?: () => void }): Promise<AgentProcess>;
  /** The failed looks logged since `mark`. */
  lookFailures(mark: number): LogLine[];
  /** The agent's peak resident memory so far, in MiB (VmHWM). */
  peakMiB(): number;
  close(): Promise<void>;
}

export async function startFaultyGitWorld(server: GitHttpServer, name: string): Promise<FaultyGitWorld> {
  const cleanups: Array<() => unknown> = [];
  const close = async () => {
    for (const c of cleanups.reverse()) await c();
  };
  try {
    server.createRepository(name);
    const proxy = await startFaultyGitProxy(server.port);
    cleanups.push(() => proxy.stop());
    const fx = await stackFixture({ signed: false, components: () => [sleeper('app'), sleeper('side')] });
    cleanups.push(() => fx.cleanup());
    const h = new AgentHarness();
    cleanups.push(() => h.cleanup());
    await gitIn(fx.dir, ['init', '--quiet', '--initial-branch=main']);
    const commitAndPush = async (message: string) => {
      await gitIn(fx.dir, ['add', '-A']);
      await gitIn(fx.dir, ['commit', '--quiet', '-m', message]);
      await gitIn(fx.dir, ['push', '--quiet', server.url(name), 'HEAD:refs/heads/main']);
      return gitIn(fx.dir, ['rev-parse', 'HEAD']);
    };
    const start = () =>
      h.start({
        repo: proxy.url(name),
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--ref', 'main', '--poll', '1s', '--status', 'none'],
      });
    const first = await commitAndPush('app and side');
    const world: FaultyGitWorld = {
      fx,
      h,
      agent: start(),
      proxy,
      first,
      async pushVersion(version) {
        fx.bumpVersion('app', version);
        return commitAndPush(`app ${version}`);
      },
      async restart(opts = {}) {
        const exit = await world.agent.stop();
        expect(exit.code, world.agent.tail()).toBe(0);
        opts.before?.();
        world.agent = start();
        return world.agent;
      },
      lookFailures: (mark) => world.agent.lines(is.msg(LOOK_FAILED), mark),
      peakMiB() {
        const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${world.agent.pid}/status`, 'utf8'));
        return m ? Number(m[1]) / 1024 : 0;
      },
      close,
    };
    await appliedOk(world, first, 0, 40_000);
    return world;
  } catch (e) {
    await close();
    throw e;
  }
}

/** Waits for the reconcile of `commit` after log index `mark` and the end of its apply, which must have succeeded. */
export async function appliedOk(w: FaultyGitWorld, commit: string, mark: number, deadlineMs = 30_000): Promise<void> {
  const what = `the apply of ${commit.slice(0, 12)}`;
  const plan = await w.agent.waitForLog(is.revision(commit, 'reconcile plan'), deadlineMs, mark, what);
  const end = await w.agent.waitForLog(is.applyEnd, deadlineMs, w.agent.logs.indexOf(plan), `the end of ${what}`);
  expect(end.msg, w.agent.tail()).toMatch(/^(all components running|apply finished)$/);
  expect(w.h.appliedRevision()?.id).toBe(commit);
}

/** Removes the device's Git cache (`<state-dir>/git`): a device whose cache was lost fetches afresh. */
export function dropCache(w: FaultyGitWorld): void {
  rmSync(join(w.h.stateDir, 'git'), { recursive: true, force: true });
}

/** Polls `cond` until it holds; throws with `what` (and the agent's last lines) at the deadline. */
export async function until(w: FaultyGitWorld, cond: () => boolean, what: string, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!cond()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}\n${w.agent.tail()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

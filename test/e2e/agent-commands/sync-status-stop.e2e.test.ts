// Issue 17, against the real agent (bin/keystone.js from dist/) following a local Git repository with a 10-minute
// poll, so that only `keystonectl sync` makes it look: its pid file (written once the state directory is locked,
// removed on a clean stop, a killed agent's stale one overwritten), `keystonectl status` naming the agent's pid and
// version and a refused newest commit with its code, `keystonectl sync` waiting for the outcome of its look (applied,
// nothing new, rejected), and `keystonectl stop --all` taking the whole stack down, dependents first.
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../../src/package-manifest.js';
import { isAlive, isSameProcess } from '../../../src/runtime/proc-identity.js';
import { AgentHarness, is, type AgentProcess } from '../../support/agent-harness.js';
import { runCtl } from '../../support/cli-run.js';
import { gitIn } from '../../support/git-env.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../../support/stack-fixture.js';

const STACK = ['db', 'api', 'telemetry', 'web'];

describe('keystonectl sync, status and stop --all against an agent following Git', { timeout: 90_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;
  let url: string;
  const ctl = (...args: string[]) => runCtl([...args, '--agent', url, '--state-dir', h.stateDir], '/');
  const pidFile = () => join(h.stateDir, 'agent.pid');
  const commit = async (message: string) => {
    await gitIn(fx.dir, ['add', '-A']);
    await gitIn(fx.dir, ['commit', '--quiet', '-m', message]);
    return gitIn(fx.dir, ['rev-parse', 'HEAD']);
  };
  const start = () =>
    h.start({
      repo: fx.dir,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: ['--ref', 'main', '--poll', '10m', '--status', 'none', '--listen', url.slice('http://'.length)],
    });

  beforeAll(async () => {
    fx = await stackFixture({
      signed: true,
      components: () => [
        sleeper('db'),
        sleeper('api', [{ component: 'db', type: 'hard' }]),
        sleeper('telemetry', [{ component: 'db', type: 'ordering' }]),
        sleeper('web', [{ component: 'api', type: 'hard' }]),
      ],
    });
    await gitIn(fx.dir, ['init', '--quiet', '--initial-branch=main']);
    await commit('stack v1');
    h = new AgentHarness();
    url = `http://127.0.0.1:${(await freePorts(1))[0]}`;
    agent = start();
    await agent.waitForLog(is.msg('all components running'), 30_000, 0, 'the first apply');
    await agent.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the API');
  });
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
  });

  it('writes its pid file once it holds the state directory, and status names its pid and version', async () => {
    expect(readFileSync(pidFile(), 'utf8')).toBe(`${agent.pid}\n`);
    const r = await ctl('status');
    expect(r.code).toBe(0);
    const [first, second] = r.stdout.split('\n');
    expect(first).toMatch(
      new RegExp(`^agent pid ${agent.pid} {2}keystone ${packageVersion().replace(/\./g, '\\.')} {2}started \\d+s ago$`),
    );
    expect(second).toMatch(/^revision [0-9a-f]{40} {2}plan plans\/stack\.toml {2}applied /);
    const json = JSON.parse((await ctl('status', '--json')).stdout) as {
      agent: { pid: number; version: string };
      revision: { agent: { pid: number } };
      rejected: unknown;
    };
    expect(json.agent).toMatchObject({ pid: agent.pid, version: packageVersion() });
    expect(json.revision.agent.pid).toBe(agent.pid);
    expect(json.rejected).toBeNull();
  });

  it('sync waits for what its look found: a new commit applied, then nothing new', async () => {
    fx.bumpVersion('api', '1.1.0');
    await fx.sign();
    const c2 = await commit('api 1.1.0');
    const before = h.pidsOf();
    const r = await ctl('sync');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^applied ${c2.slice(0, 12)}: 2 started, 2 stopped, 2 untouched\\n$`));
    // Done when it answers: the store already says so, and only api and its hard dependent web restarted.
    expect(h.appliedRevision()?.id).toBe(c2);
    const after = h.pidsOf();
    expect(after.api).not.toBe(before.api);
    expect({ db: after.db, telemetry: after.telemetry }).toEqual({ db: before.db, telemetry: before.telemetry });

    const again = await ctl('sync');
    expect(again).toEqual({
      code: 0,
      stdout: `nothing new: the device runs the newest revision of its source (${c2.slice(0, 12)})\n`,
      stderr: '',
    });
    const json = JSON.parse((await ctl('sync', '--json')).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({
      sync: 'done',
      outcome: 'unchanged',
      revision: c2,
      applied: c2,
      code: null,
      rollout: [],
    });
    const noWait = await ctl('sync', '--no-wait');
    expect(noWait).toEqual({
      code: 0,
      stdout: 'sync requested: the agent looks at its source now (not waited for)\n',
      stderr: '',
    });
  });

  it('a revert without a fresh signature: sync exits 2 naming KS_SIGNATURE_REPLAYED, and status shows the refused commit above the table', async () => {
    const applied = h.appliedRevision()!.id;
    await gitIn(fx.dir, ['revert', '--no-edit', 'HEAD']);
    const c3 = await gitIn(fx.dir, ['rev-parse', 'HEAD']);
    const r = await ctl('sync');
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(
      new RegExp(
        `^${c3.slice(0, 12)} rejected: KS_SIGNATURE_REPLAYED: signed at .*; still running ${applied.slice(0, 12)}\\n$`,
      ),
    );
    expect(h.appliedRevision()?.id).toBe(applied);

    const status = await ctl('status');
    expect(status.code).toBe(0);
    const lines = status.stdout.split('\n');
    expect(lines[1]).toMatch(new RegExp(`^revision ${applied} `));
    expect(lines[2]).toMatch(
      new RegExp(`^newest commit ${c3.slice(0, 8)} rejected: KS_SIGNATURE_REPLAYED: signed at `),
    );
    expect(lines[3]).toMatch(/^policy: /);
    const json = JSON.parse((await ctl('status', '--json')).stdout) as {
      rejected: { revision: string; code: string; reason: string };
    };
    expect(json.rejected).toMatchObject({ revision: c3, code: 'KS_SIGNATURE_REPLAYED' });
    expect(json.rejected.reason).toMatch(/^KS_SIGNATURE_REPLAYED: /);

    // Signed again, the revert is applied and the refusal is no longer the newest news.
    await fx.sign();
    const c4 = await commit('revert, signed again');
    expect((await ctl('sync')).stdout).toMatch(new RegExp(`^applied ${c4.slice(0, 12)}: `));
    const cleared = await ctl('status');
    expect(cleared.stdout).not.toContain('rejected');
  });

  it('stop --all stops every component, dependents first, each held stopped; the agent keeps running', async () => {
    const running = h.components().map((c) => c.instance);
    expect(running.every((i) => i?.kind === 'process' && isSameProcess(i.pid, i.startTime))).toBe(true);
    const r = await ctl('stop', '--all');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'stopped: web telemetry api db\n(all held stopped until `keystonectl start`; the agent keeps running)\n',
    );
    const records = h.components();
    expect(records.map((c) => [c.name, c.state, c.held])).toEqual(STACK.map((n) => [n, 'stopped', true]));
    // Gone, or a zombie the agent's event loop has not reaped yet: the stop waits for the process group to be dead
    // (its /proc state), not for the agent to collect the exit status.
    for (const i of running)
      if (i?.kind === 'process')
        expect(isSameProcess(i.pid, i.startTime) && isAlive(i.pid), `pid ${i.pid} still runs`).toBe(false);
    expect(h.processes()).toEqual([]);
    expect(agent.exit).toBeUndefined();
    // Nothing left to stop is not an error.
    expect((await ctl('stop', '--all')).code).toBe(0);
    expect((await ctl('stop', 'web', '--all')).code).toBe(2);
  });

  it('a look that cannot read the source: sync exits 1 saying so, not "nothing new"; the stack keeps running', async () => {
    renameSync(join(fx.dir, '.git'), join(fx.dir, '.git-away'));
    try {
      const r = await ctl('sync');
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).toMatch(/KS_SYNC_FAILED|could not be read/);
      expect(r.stdout).not.toMatch(/nothing new/);
    } finally {
      renameSync(join(fx.dir, '.git-away'), join(fx.dir, '.git'));
    }
    expect((await ctl('sync')).code).toBe(0);
  });

  it('a killed agent leaves its pid file behind; the next agent overwrites it, and a clean stop removes it', async () => {
    const killed = agent.pid;
    await agent.kill9();
    expect(readFileSync(pidFile(), 'utf8')).toBe(`${killed}\n`);
    agent = start();
    await agent.waitForLog(is.msg('HTTP API listening'), 30_000, 0, 'the API of the second agent');
    expect(readFileSync(pidFile(), 'utf8')).toBe(`${agent.pid}\n`);
    expect((await ctl('status')).stdout).toMatch(new RegExp(`^agent pid ${agent.pid} `));
    await agent.stop();
    expect(agent.exit).toEqual({ code: 0, signal: null });
    // Removed before the agent let go of the lock, so before it exited.
    expect(existsSync(pidFile())).toBe(false);
  });
});

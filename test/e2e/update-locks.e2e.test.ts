// Update locks (SPEC §19) with a real agent, real components and real flock(2) holders: a revision that would stop a
// component holding its lock waits — nothing of it applied, `pending` with the reason in the API, status and history —
// and is applied the moment the lock is let go; the agent holds the lock itself while it stops the component; a
// dependent chain waits as a whole; a crash restart still acts; a newer revision replaces the waiting one;
// lock_timeout applies anyway; a forced manual apply does not wait.
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';
import { apiOf, type AgentApi } from '../support/agent-api.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { until } from '../support/composite-fixture.js';
import { holdLock, letGo, lockedComponent as locked } from '../support/lock-holder.js';
import { freePorts, stackFixture, type StackFixture } from '../support/stack-fixture.js';

type Json = Record<string, unknown>;

describe(
  'update locks: the device decides when a component is stopped for a new revision',
  { timeout: 120_000 },
  () => {
    let fx: StackFixture;
    let h: AgentHarness;
    let agent: AgentProcess;
    let api: AgentApi;
    let port: number;
    const holders: ChildProcess[] = [];

    const waiting = async () => ((await api.get('/v1/revision')).body as Json).waiting as Json | null;
    const lockOf = (name: string) => join(h.workDir(name), 'run', 'update.lock');

    beforeAll(async () => {
      // api holds its lock while it works; web depends on it (hard); batch gives up waiting after 2 s.
      fx = await stackFixture({
        signed: false,
        components: () => [
          locked('api'),
          {
            name: 'web',
            version: '1.0.0',
            command: 'sleep',
            args: ['1000'],
            dependencies: [{ component: 'api', type: 'hard' }],
          },
          locked('batch', '2s'),
        ],
      });
      h = new AgentHarness();
      [port] = (await freePorts(1)) as [number];
      agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, args: ['--listen', `127.0.0.1:${port}`] });
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
      api = apiOf(h.stateDir, port);
      await until(() => existsSync(lockOf('api')) && existsSync(lockOf('batch')), 10_000, 'the lock files');
    }, 60_000);
    afterAll(async () => {
      for (const c of holders.splice(0)) letGo(c);
      await h?.cleanup();
      fx?.cleanup();
    });

    it("held: nothing of the revision runs, the chain waits whole, a crash restart still acts, a newer revision replaces it; released: applied at once, the lock the agent's during the stop", async () => {
      const holder = await holdLock(lockOf('api'));
      holders.push(holder);
      const before = h.pidsOf();
      const mark = agent.mark();
      fx.spec('api').version = '1.1.0';
      fx.write();
      await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: api holds its update lock'),
        20_000,
        mark,
        'the revision to wait for the lock',
      );

      const w = await waiting();
      expect(w).toMatchObject({
        reason: 'held: api holds its update lock',
        holders: [{ component: 'api', lock: 'run/update.lock', timeoutAt: null }],
      });
      const first = w!.revision as string;
      // Nothing of it was applied: no row, nothing stopped (web, hard on api, neither), what runs is the old revision.
      expect(h.history().filter((e) => e.revision === first)).toEqual([]);
      expect(agent.lines(is.msg('reconcile plan'), mark)).toEqual([]);
      expect(h.pidsOf()).toEqual(before);
      expect(h.component('api')?.version).toBe('1.0.0');
      const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
      const ctl = ['--agent', `http://127.0.0.1:${port}`, '--token', token];
      const status = await runCtl(['status', ...ctl], fx.dir);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(`pending ${first}: held: api holds its update lock`);
      const history = await runCtl(['history', ...ctl], fx.dir);
      expect(history.stdout.split('\n')[0]).toMatch(new RegExp(`^pending ${first}: held: api holds its update lock`));
      const sync = await runCtl(['sync', ...ctl], fx.dir);
      expect(sync.stdout).toContain('held: api holds its update lock');

      // A crash restart is not an update: api is restarted as it was (its version, not the waiting one's).
      const crashed = before.api!;
      process.kill(crashed, 'SIGKILL');
      await until(
        () => h.component('api')?.state === 'running' && h.pidsOf().api !== crashed && h.pidsOf().api,
        20_000,
        'api restarted after its crash',
      );
      expect(h.component('api')?.version).toBe('1.0.0');
      // Its hard dependent follows a crash restart as always (SPEC §4); then all is quiet again.
      const afterCrash = await until(
        () => {
          const p = h.pidsOf();
          return h.component('web')?.state === 'running' && p.web !== before.web && p;
        },
        20_000,
        'web restarted after api',
      );

      // A newer revision replaces the waiting one (the device waits for the newest only).
      const mark2 = agent.mark();
      fx.spec('api').version = '1.2.0';
      fx.write();
      const second = await until(
        async () => {
          const now = await waiting();
          return now && now.revision !== first ? (now.revision as string) : undefined;
        },
        20_000,
        'the newer revision to wait instead',
      );
      expect(h.pidsOf()).toEqual(afterCrash);

      // Let go: applied at once (the release is watched, not polled for), the newer revision, web restarted with api.
      letGo(holder);
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark2, 'the apply once the lock is let go');
      expect(end.msg).toBe('all components running');
      expect(h.appliedRevision()?.id).toBe(second);
      expect(h.component('api')?.version).toBe('1.2.0');
      expect(h.pidsOf().web).not.toBe(afterCrash.web);
      expect(h.history().filter((e) => e.revision === first)).toEqual([]);
      expect(await waiting()).toBeNull();
      // During its stop the component could not take its own lock: the agent held it.
      expect(readFileSync(join(h.workDir('api'), 'run', 'at-stop'), 'utf8').trim()).toBe('busy');
    });

    it('lock_timeout: a lock held longer than it is not waited for', async () => {
      holders.push(await holdLock(lockOf('batch')));
      const mark = agent.mark();
      fx.spec('batch').version = '1.1.0';
      fx.write();
      await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: batch holds its update lock'),
        20_000,
        mark,
        'batch to wait',
      );
      const w = await waiting();
      expect(Date.parse((w!.holders as Json[])[0]!.timeoutAt as string) - Date.parse(w!.since as string)).toBe(2_000);
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply once lock_timeout passed');
      expect(end.msg).toBe('all components running');
      // Not before the timeout, as the agent's own clock tells both (its log line and the timeoutAt it announced).
      const began = agent.lines(is.msg('reconcile plan'), mark)[0]!;
      expect(began.t).toBeGreaterThanOrEqual(Date.parse((w!.holders as Json[])[0]!.timeoutAt as string));
      expect(h.component('batch')?.version).toBe('1.1.0');
    });

    it('keystonectl apply --force does not wait for a lock', async () => {
      holders.push(await holdLock(lockOf('api')));
      const token = readFileSync(join(h.stateDir, API_TOKEN_FILE), 'utf8').trim();
      const mark = agent.mark();
      fx.spec('api').version = '1.3.0';
      fx.write();
      await agent.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('held: api holds its update lock'),
        20_000,
        mark,
        'the revision to wait',
      );
      const forced = await runCtl(
        ['apply', fx.plan, ...fx.trustArgs, '--force', '--agent', `http://127.0.0.1:${port}`, '--token', token],
        fx.dir,
      );
      expect(forced.code, forced.stderr + forced.stdout).toBe(0);
      expect(h.appliedRevision()?.id).toMatch(/^manual:/);
      expect(h.component('api')?.version).toBe('1.3.0');
      expect(await waiting()).toBeNull();
    });

    it("a new recipe that drops the lock is not held by the old one (the operator's way out)", async () => {
      // batch's lock is still held from the lock_timeout case: let go, and held again here.
      for (const c of holders.splice(0)) letGo(c);
      const holder = await holdLock(lockOf('batch'));
      holders.push(holder);
      const mark = agent.mark();
      delete fx.spec('batch').updateLock;
      fx.spec('batch').version = '1.2.0';
      fx.write();
      const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply of the recipe without a lock');
      expect(end.msg).toBe('all components running');
      expect(agent.lines((l) => typeof l.msg === 'string' && l.msg.startsWith('held:'), mark)).toEqual([]);
      expect(h.component('batch')?.version).toBe('1.2.0');
    });
  },
);

describe('update locks: a component that takes its lock again and again', { timeout: 120_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;

  beforeAll(async () => {
    // Its job holds the lock 300 ms, then takes it again at once: a release the agent did not keep would be lost.
    const script = ['mkdir -p run && : >> run/update.lock', 'while :; do flock run/update.lock sleep 0.3; done'].join(
      '\n',
    );
    fx = await stackFixture({
      signed: false,
      components: () => [
        {
          name: 'looper',
          version: '1.0.0',
          command: 'sh',
          args: ['-c', script],
          updateLock: { lock: 'run/update.lock' },
        },
      ],
    });
    h = new AgentHarness();
    agent = h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs });
    expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
  }, 60_000);
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
  });

  it('is updated at the end of a job: the lock the watcher got is the one the agent stops it with', async () => {
    const mark = agent.mark();
    fx.spec('looper').version = '1.1.0';
    fx.write();
    const end = await agent.waitForLog(is.applyEnd, 30_000, mark, 'the apply between two jobs');
    expect(end.msg).toBe('all components running');
    expect(h.component('looper')?.version).toBe('1.1.0');
  });
});

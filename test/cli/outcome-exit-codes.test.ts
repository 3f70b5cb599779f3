// `keystonectl apply` and `keystonectl sync` against a real agent (`keystone agent --dir` as a child process, its API on
// a free loopback port): the exit code is the outcome's, health included (issue 27, SPEC §9: 0 ok, 1 the operation
// failed, 2 bad input). A user reported exit codes that ignore health: an apply that left a component unhealthy was
// reported `applied` (exit 0) by sync and `success` by apply. The directory's watcher never settles here (--settle 10m):
// only `keystonectl sync` makes the agent look, so each look finds exactly the change the test made.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyExit } from '../../src/cli/commands/apply.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { until } from '../support/composite-fixture.js';
import { freePorts, neverHealthy, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

type Json = Record<string, unknown>;

describe(
  'keystonectl apply and sync exit with the outcome, health included (a real agent)',
  { timeout: 60_000 },
  () => {
    let fx: StackFixture;
    let h: AgentHarness;
    let agent: AgentProcess;
    let url: string;
    let token: string;
    let closed: number;

    beforeAll(async () => {
      fx = await stackFixture({ components: () => [sleeper('db')] });
      h = new AgentHarness();
      let port: number;
      [port, closed] = (await freePorts(2)) as [number, number];
      url = `http://127.0.0.1:${port}`;
      agent = h.start({
        dir: fx.dir,
        plan: fx.plan,
        trustArgs: fx.trustArgs,
        args: ['--settle', '10m', '--listen', `127.0.0.1:${port}`],
      });
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
      await agent.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the API');
      const file = join(h.stateDir, 'api-token');
      token = await until(() => existsSync(file) && readFileSync(file, 'utf8').trim(), 10_000, 'the API token file');
    }, 60_000);
    afterAll(async () => {
      await h?.cleanup();
      fx?.cleanup();
    });

    /**
     * With a deadline of its own: `--timeout` rests on AbortSignal.timeout, which does not always fire while a response
     * body is read (the signal can be collected first), so a stream the agent never ends would hold the test.
     */
    const ctl = async (...args: string[]) => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(
            () => reject(new Error(`keystonectl ${args.join(' ')} did not end within 25 s\n${agent.tail(15)}`)),
            25_000,
          )),
      );
      try {
        return await Promise.race([runCtl([...args, '--agent', url, '--token', token], fx.dir), deadline]);
      } finally {
        clearTimeout(timer);
      }
    };
    const shown = (r: { code: number; stdout: string; stderr: string }) =>
      `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\n${agent.tail(15)}`;

    it('sync with nothing new: exit 0', async () => {
      const r = await ctl('sync');
      expect(r.code, shown(r)).toBe(0);
      expect(r.stdout).toMatch(/^nothing new/);
    });

    it('sync of a revision whose new component never gets healthy: failed, exit 1', async () => {
      fx.add(neverHealthy('broken', closed));
      const rev = await fx.revisionId();
      const r = await ctl('sync');
      expect(r.stdout, shown(r)).toMatch(new RegExp(`^apply of ${rev} failed: failed: broken`));
      expect(r.code, shown(r)).toBe(1);
      expect(h.history()[0]).toMatchObject({ revision: rev, outcome: 'failure' });
    });

    it('sync of a revision that leaves that unhealthy component untouched: failed, exit 1 (not "applied", exit 0)', async () => {
      fx.add(sleeper('extra'));
      const rev = await fx.revisionId();
      const r = await ctl('sync', '--json');
      const body = JSON.parse(r.stdout) as Json;
      expect(body, shown(r)).toMatchObject({ outcome: 'failed', revision: rev });
      expect(String(body.summary)).toContain('broken');
      expect(r.code, shown(r)).toBe(1);
      expect(h.history()[0]).toMatchObject({ revision: rev, outcome: 'failure' });
      expect(h.component('broken')?.state).toBe('unhealthy');
    });

    it('sync with nothing new while what runs failed: unchanged, but exit 1 and said (appliedOutcome failure)', async () => {
      const rev = await fx.revisionId();
      const r = await ctl('sync', '--json');
      const body = JSON.parse(r.stdout) as Json;
      expect(body, shown(r)).toMatchObject({ outcome: 'unchanged', revision: rev, appliedOutcome: 'failure' });
      expect(r.code, shown(r)).toBe(1);
      const plain = await ctl('sync');
      expect(plain.stdout, shown(plain)).toContain('its apply failed on this device');
      expect(plain.code, shown(plain)).toBe(1);
    });

    it('apply of that content: outcome failure, exit 1, in the plain form and in --json', async () => {
      const r = await ctl('apply', fx.plan, '--allow-unsigned');
      expect(r.stdout.trim().split('\n').at(-1), shown(r)).toMatch(
        /^\[apply\] outcome=failure converged=false msg=failed: broken/,
      );
      expect(r.stderr).toMatch(/keystonectl apply: failure: failed: broken/);
      expect(r.code, shown(r)).toBe(1);
      const j = await ctl('apply', fx.plan, '--allow-unsigned', '--json');
      const doc = JSON.parse(j.stdout) as Json;
      expect(doc, shown(j)).toMatchObject({ outcome: 'failure', converged: false });
      expect(j.code, shown(j)).toBe(1);
      for (const e of h.history().slice(0, 2)) expect(e).toMatchObject({ outcome: 'failure' });
    });

    it('once every component is healthy: sync exits 0 (applied), apply exits 0 (success, converged)', async () => {
      fx.remove('broken');
      const rev = await fx.revisionId();
      const s = await ctl('sync');
      expect(s.stdout, shown(s)).toMatch(new RegExp(`^applied ${rev}: `));
      expect(s.code, shown(s)).toBe(0);
      const a = await ctl('apply', fx.plan, '--allow-unsigned');
      expect(a.stdout.trim().split('\n').at(-1), shown(a)).toMatch(/^\[apply\] outcome=success converged=true /);
      expect(a.code, shown(a)).toBe(0);
    });

    it('a component an operator holds stopped does not fail an apply: success, exit 0 (apply and sync)', async () => {
      const stop = await ctl('stop', 'extra');
      expect(stop.code, shown(stop)).toBe(0);
      expect(h.component('extra')).toMatchObject({ state: 'stopped', held: true });
      const a = await ctl('apply', fx.plan, '--allow-unsigned');
      expect(a.stdout.trim().split('\n').at(-1), shown(a)).toMatch(/^\[apply\] outcome=success /);
      expect(a.code, shown(a)).toBe(0);
      fx.add(sleeper('more'));
      const rev = await fx.revisionId();
      const s = await ctl('sync');
      expect(s.stdout, shown(s)).toMatch(new RegExp(`^applied ${rev}: `));
      expect(s.code, shown(s)).toBe(0);
      expect(h.component('extra')).toMatchObject({ state: 'stopped', held: true });
    });

    it('a revision the agent refuses keeps exit 2', async () => {
      fx.edit(fx.recipePath('db'), 'restart_policy', 'restart_polcy');
      try {
        const rev = await fx.revisionId();
        const r = await ctl('sync');
        expect(r.stdout, shown(r)).toMatch(new RegExp(`^${rev} rejected: invalid`));
        expect(r.code, shown(r)).toBe(2);
      } finally {
        fx.edit(fx.recipePath('db'), 'restart_polcy', 'restart_policy');
      }
    });
  },
);

describe('applyExit: the exit code of a finished apply, health included', () => {
  const c = (name: string, state: string, reason: string | null = null) => ({ name, state, pid: null, reason });
  const exit = (done: Parameters<typeof applyExit>[0]) => {
    let said = '';
    return { code: applyExit(done, (s) => (said += s)), said };
  };

  it('success: 0 when every component runs, and when the only ones not running are stopped (held by an operator)', () => {
    expect(exit({ outcome: 'success', summary: 's', converged: true, components: [c('a', 'running')] })).toEqual({
      code: 0,
      said: '',
    });
    expect(
      exit({
        outcome: 'success',
        summary: 's',
        converged: false,
        components: [c('a', 'running'), c('b', 'stopped', 'stopped by an operator')],
      }),
    ).toEqual({
      code: 0,
      said: 'keystonectl apply: success; held stopped: b (keystonectl start NAME runs it again)\n',
    });
  });

  it('a success that leaves a component unhealthy is not trusted: 1, naming it', () => {
    const r = exit({
      outcome: 'success',
      summary: '0 started, 0 stopped, 2 untouched',
      converged: false,
      components: [c('a', 'running'), c('b', 'unhealthy', 'health check failed')],
    });
    expect(r.code).toBe(1);
    expect(r.said).toBe(
      'keystonectl apply: the agent reported success, but not every component is healthy: b (unhealthy: health check failed)\n',
    );
  });

  it('failure and superseded: 1; rejected: 2 (bad input)', () => {
    expect(
      exit({
        outcome: 'failure',
        summary: 'failed: b (not healthy)',
        converged: false,
        components: [c('b', 'unhealthy')],
      }),
    ).toEqual({ code: 1, said: 'keystonectl apply: failure: failed: b (not healthy)\n' });
    expect(exit({ outcome: 'superseded', summary: 'replaced', converged: false, components: [] }).code).toBe(1);
    expect(exit({ outcome: 'rejected', summary: 'invalid', converged: false, components: [] }).code).toBe(2);
  });
});

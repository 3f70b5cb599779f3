// Issue 34 (the second hour): `keystonectl start --all`, the mirror of `stop --all`, against the real agent
// (bin/keystone.js from dist/): every component, dependencies first (the agent's start order), each started and its
// operator's hold released, each waited for as `start NAME` waits; `--json` as `{ started, results }`; a NAME and
// --all together refused (exit 2).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, isSameProcess } from '../../src/runtime/proc-identity.js';
import { AgentHarness, is, type AgentProcess } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { freePorts, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

/** The agent's start order: db first; api (hard on db) and telemetry (ordering on db); web (hard on api) last. */
const STACK = ['db', 'api', 'telemetry', 'web'];

describe('keystonectl start --all against a running agent', { timeout: 90_000 }, () => {
  let fx: StackFixture;
  let h: AgentHarness;
  let agent: AgentProcess;
  let url: string;
  const ctl = (...args: string[]) => runCtl([...args, '--agent', url, '--state-dir', h.stateDir], '/');

  beforeAll(async () => {
    fx = await stackFixture({
      components: () => [
        sleeper('db'),
        sleeper('api', [{ component: 'db', type: 'hard' }]),
        sleeper('telemetry', [{ component: 'db', type: 'ordering' }]),
        sleeper('web', [{ component: 'api', type: 'hard' }]),
      ],
    });
    h = new AgentHarness();
    url = `http://127.0.0.1:${(await freePorts(1))[0]}`;
    agent = h.start({
      dir: fx.dir,
      plan: fx.plan,
      trustArgs: fx.trustArgs,
      args: ['--listen', url.slice('http://'.length)],
    });
    await agent.waitForLog(is.msg('all components running'), 30_000, 0, 'the first apply');
    await agent.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the API');
  });
  afterAll(async () => {
    await h?.cleanup();
    fx?.cleanup();
  });

  it('brings back what stop --all took down: dependencies first, each running, held no more, when it returns', async () => {
    expect((await ctl('stop', '--all')).code).toBe(0);
    expect(h.components().map((c) => [c.name, c.state, c.held])).toEqual(STACK.map((n) => [n, 'stopped', true]));

    const r = await ctl('start', '--all');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('started: db api telemetry web\n');
    // Waited for (--wait health, as `start NAME`): the store says running as soon as the command is back.
    const records = h.components();
    expect(records.map((c) => [c.name, c.state, c.held])).toEqual(STACK.map((n) => [n, 'running', false]));
    for (const c of records) {
      const i = c.instance;
      expect(i?.kind === 'process' && isSameProcess(i.pid, i.startTime) && isAlive(i.pid), `${c.name} runs`).toBe(true);
    }
    // The agent was asked in its start order: what each depends on before it.
    const asked = agent.lines((l) => l.msg === 'start requested').map((l) => l.component);
    expect(asked).toEqual(STACK);
    expect(agent.exit).toBeUndefined();
  });

  it('--json: { started, results }; nothing to start is not an error and restarts nothing', async () => {
    const before = h.pidsOf();
    const r = await ctl('start', '--all', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout) as {
      started: string[];
      results: Array<{ component: string; started: string[]; wait: string }>;
    };
    expect(json.started).toEqual([]);
    expect(json.results.map((x) => [x.component, x.started, x.wait])).toEqual(STACK.map((n) => [n, [], 'health']));
    expect(h.pidsOf()).toEqual(before);
    expect(await ctl('start', '--all')).toEqual({
      code: 0,
      stdout: 'every component was already running\n',
      stderr: '',
    });
  });

  it('after a partial stop: starts only what is down, in order; the JSON lists each start', async () => {
    // Stopping api holds web (hard on api) stopped too; db and telemetry keep running.
    expect((await ctl('stop', 'api')).code).toBe(0);
    const r = await ctl('start', '--all', '--json');
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout) as {
      started: string[];
      results: Array<{ component: string; started: string[] }>;
    };
    expect(json.started).toEqual(['api', 'web']);
    expect(json.results.map((x) => x.component)).toEqual(STACK);
    expect(h.components().map((c) => [c.name, c.state, c.held])).toEqual(STACK.map((n) => [n, 'running', false]));
  });

  it('a NAME and --all together: refused, exit 2, nothing asked of the agent', async () => {
    const r = await ctl('start', 'web', '--all');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('give a component NAME or --all, not both');
    expect(r.stderr).toContain('usage: keystonectl start (NAME | --all)');
  });
});

// Outcomes across agent restarts (issue 27, SPEC §5 "Outcomes are the truth, across restarts"), path by path, with
// real agents (`keystone agent` child processes), real components and real restarts (SIGTERM and kill -9):
//   - adoption after a restart (processes): a component whose check never passes stays a failure, adopted, never a
//     success; the health check of adopted instances that then passes writes one `recovered` row, once;
//   - an apply interrupted at every crash point (KEYSTONE_CRASH_AT) is finished with its true result in the same
//     history row, failure or success, with no "interrupted" failure beside it; and a kill inside the health check of
//     adopted instances (adopted-health-wait) restarts nothing and writes nothing;
//   - composites: a rolled-back composite's failure stands across restarts, at its previous members;
//   - manual applies (`keystonectl apply`) and an operator restart (`keystonectl restart`): a failure stays one, an
//     operator restart that gets the component healthy is a `recovered` row beside it, never a success.
// Every wait polls with a deadline; the agent's log is read as JSON.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CRASH_POINTS, type ApplyCrashPoint } from '../../src/agent/crash-point.js';
import { isSameProcess } from '../../src/runtime/proc-identity.js';
import type { HistoryEntry } from '../../src/store/state-store.js';
import { AgentHarness, is, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { runCtl } from '../support/cli-run.js';
import { CompositeAgent, compositeRepo, q, until, type CompositeRepo } from '../support/composite-fixture.js';
import {
  freePorts,
  sleeper,
  stackFixture,
  type ComponentSpec,
  type HealthSpec,
  type StackFixture,
} from '../support/stack-fixture.js';

// ---------------------------------------------------------------------------------------------------------------------
// Shared pieces

/** The contract's log lines (SPEC §5, issue 27). */
const RESUMED = 'resumed the revision applied last';
const CHECKING = 'checking the health of adopted instances';
const CHECKED = 'adopted instances checked';

const startsWith = (text: string) => (l: LogLine) => typeof l.msg === 'string' && l.msg.startsWith(text);

/**
 * The first revision an agent takes up after a restart is settled: either applied (the usual end of an apply) or
 * resumed (the revision the device ran, taken up where it stood: no new history row).
 */
const settledLine = (l: LogLine): boolean => is.applyEnd(l) || startsWith(RESUMED)(l);

/** A check that never passes: an endpoint on a port nobody listens on. Budget 5 × 200 ms = 1 s. */
const never = (closedPort: number): HealthSpec => ({
  check: `http://127.0.0.1:${closedPort}/never`,
  interval: '200ms',
  timeout: '150ms',
  failureThreshold: 5,
});

/**
 * Healthy only once its work directory holds `ok` (cmd: checks run there, as the run user). A new instance writes
 * `ok` itself when the test has put `go` there first: an operator restart then gets it healthy, the running instance
 * does not. Budget 10 × 200 ms = 2 s (a cmd: probe forks setpriv and a shell: slow on a loaded machine).
 */
function untilOk(name: string): ComponentSpec {
  return {
    name,
    version: '1.0.0',
    command: 'sh',
    args: ['-c', 'if test -f go; then touch ok; fi; exec sleep 1000'],
    health: { check: 'cmd:test -f ok', interval: '200ms', timeout: '1s', failureThreshold: 10 },
  };
}

/** A plain long-running process whose check always passes (a real probe for the health check of adopted instances). */
function checked(name: string): ComponentSpec {
  return {
    name,
    version: '1.0.0',
    command: 'sleep',
    args: ['1000'],
    health: { check: 'cmd:test -d .', interval: '200ms', timeout: '1s', failureThreshold: 25 },
  };
}

/** Rows of one revision, newest first. */
const rowsOf = (h: AgentHarness, revision: string): HistoryEntry[] =>
  h.history().filter((e) => e.revision === revision);

/**
 * SPEC §5 / contract point 6: never, for the same revision on one device, a `failure` followed later by a `success`.
 * Returned as a list of offending pairs so that a failure shows them.
 */
function failureThenSuccess(history: readonly HistoryEntry[]): string[] {
  const out: string[] = [];
  const oldestFirst = [...history].reverse();
  oldestFirst.forEach((e, i) => {
    if (e.outcome !== 'failure') return;
    for (const later of oldestFirst.slice(i + 1))
      if (later.revision === e.revision && later.outcome === 'success')
        out.push(`#${e.id} failure (${e.summary}) then #${later.id} success (${later.summary}) for ${e.revision}`);
  });
  return out;
}

/** The rows as a comparable text (id, revision, outcome, summary, finished or not), newest first. */
const rowsText = (rows: readonly HistoryEntry[]) =>
  rows.map((e) => `#${e.id} ${e.revision} ${e.outcome ?? 'unfinished'} ${e.summary ?? ''}`);

/**
 * Waits until `revision` has history rows and every one is finished. The end of an apply is logged around the time
 * its row is finished, not necessarily after: a test reads the history only once the row says how the apply ended.
 */
async function rowsFinished(h: AgentHarness, revision: string, deadlineMs = 10_000): Promise<HistoryEntry[]> {
  return until(
    () => {
      const rows = rowsOf(h, revision);
      return rows.length > 0 && rows.every((e) => e.finishedAt !== undefined) && rows;
    },
    deadlineMs,
    `the history rows of ${revision}, finished`,
  );
}

/** Waits for the first revision after a restart to be settled, then for every row of `revision` to be finished. */
async function settleAfterRestart(
  h: AgentHarness,
  agent: AgentProcess,
  revision: string,
  deadlineMs = 30_000,
): Promise<LogLine> {
  const line = await agent.waitForLog(
    settledLine,
    deadlineMs,
    0,
    `the revision applied or resumed after the restart (${revision})`,
  );
  await rowsFinished(h, revision);
  return line;
}

/** The fields of the adopted-instances lines, as lists. */
const listField = (l: LogLine | undefined, key: string): string[] =>
  Array.isArray(l?.[key]) ? (l[key] as string[]).slice().sort() : [];

/** The live process instance of a component, as the store records it (pid and start time checked in /proc). */
function liveInstance(h: AgentHarness, name: string): { pid: number; startTime: string } {
  const inst = h.component(name)?.instance;
  if (inst?.kind !== 'process') throw new Error(`${name} has no process instance`);
  expect(isSameProcess(inst.pid, inst.startTime), `${name}'s pid ${inst.pid} is the recorded process`).toBe(true);
  return { pid: inst.pid, startTime: inst.startTime };
}

/** Reads the token the agent wrote into its state directory, once it is there. */
async function tokenOf(h: AgentHarness): Promise<string> {
  const file = join(h.stateDir, 'api-token');
  return until(() => existsSync(file) && readFileSync(file, 'utf8').trim(), 10_000, 'the API token file');
}

/**
 * A command's promise with a deadline of its own: `keystonectl apply --timeout` rests on AbortSignal.timeout, which
 * does not always fire while a response body is read (the signal can be collected first), so a stream the agent
 * never ends would hold the test until the test's own timeout.
 */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms)),
  );
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

type Restart = 'SIGTERM' | 'kill -9';

async function endAgent(agent: AgentProcess, how: Restart): Promise<void> {
  if (how === 'SIGTERM')
    expect(await agent.stop(), `the agent stops on SIGTERM\n${agent.tail()}`).toEqual({ code: 0, signal: null });
  else expect((await agent.kill9()).signal).toBe('SIGKILL');
}

// ---------------------------------------------------------------------------------------------------------------------
// 1. Adoption after a restart (processes): the reproduction.

describe('a process whose health check never passes, across agent restarts', { timeout: 120_000 }, () => {
  let fx: StackFixture | undefined;
  let h: AgentHarness | undefined;
  afterEach(async () => {
    await h?.cleanup();
    fx?.cleanup();
    fx = undefined;
    h = undefined;
  });

  it('stays failure (one finished row, never a success), adopted with the same pid and unhealthy "after the agent restarted"; the adopted check that later passes writes one `recovered` row, once', async () => {
    fx = await stackFixture({ components: () => [sleeper('db'), untilOk('flaky')] });
    h = new AgentHarness();
    const start = () => h!.start({ dir: fx!.dir, plan: fx!.plan, trustArgs: fx!.trustArgs });
    const rev = await fx.revisionId();

    let agent = start();
    const end = await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply');
    expect(end.msg).toMatch(/^apply failed/);
    const failed = await rowsFinished(h, rev);
    expect(failed).toMatchObject([{ outcome: 'failure' }]);
    expect(failed[0]!.summary).toContain('flaky');
    const pids = { db: liveInstance(h, 'db'), flaky: liveInstance(h, 'flaky') };

    for (const how of ['SIGTERM', 'kill -9'] as const) {
      await endAgent(agent, how);
      agent = start();
      await settleAfterRestart(h, agent, rev);
      // The outcome stands: the very row of the failure, nothing beside it, no success anywhere.
      expect(rowsText(h.history()), `the history after the ${how} restart`).toEqual(rowsText(failed));
      expect(failureThenSuccess(h.history())).toEqual([]);
      // Adopted, not restarted; probed, and found unhealthy after the restart.
      expect(liveInstance(h, 'flaky'), `flaky adopted after the ${how} restart`).toEqual(pids.flaky);
      expect(liveInstance(h, 'db'), `db adopted after the ${how} restart`).toEqual(pids.db);
      await agent.waitForLog(is.msg(CHECKING), 10_000, 0, `"${CHECKING}" after the ${how} restart`);
      const checking = agent.lines(is.msg(CHECKING));
      expect(checking, 'the adopted instances are checked once').toHaveLength(1);
      expect(listField(checking[0], 'components')).toEqual(['db', 'flaky']);
      const done = await agent.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
      expect(listField(done, 'healthy')).toEqual(['db']);
      expect(listField(done, 'unhealthy')).toEqual(['flaky']);
      expect(agent.logs.indexOf(checking[0]!)).toBeLessThan(agent.logs.indexOf(done));
      const rec = await until(
        () =>
          h!.component('flaky')?.reason?.includes('after the agent restarted') ? h!.component('flaky') : undefined,
        10_000,
        'flaky unhealthy "after the agent restarted"',
      );
      expect(rec.state).toBe('unhealthy');
      expect(h.component('db')?.state).toBe('running');
      expect(
        agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing'),
        'nothing started or stopped',
      ).toEqual([]);
      expect(rowsText(h.history()), 'still the one failure').toEqual(rowsText(failed));
    }

    // While the agent is down the component comes good (its check passes now): the health check of adopted
    // instances finds it healthy at the next start. That is a recovery, its own row beside the failure.
    await endAgent(agent, 'SIGTERM');
    writeFileSync(join(h.workDir('flaky'), 'ok'), '');
    agent = start();
    await settleAfterRestart(h, agent, rev);
    const recovered = await until(
      () => rowsOf(h!, rev).find((e) => e.outcome === 'recovered'),
      15_000,
      'a `recovered` row',
    );
    expect(rowsText(rowsOf(h, rev)), 'the failure stays; the recovery is beside it').toEqual(
      rowsText([recovered, ...failed]),
    );
    const recoveredLog = (l: LogLine) => l.module === 'agent' && startsWith('recovered: ')(l);
    await agent.waitForLog(recoveredLog, 10_000, 0, 'the log line of the recovery');
    expect(agent.lines(recoveredLog)).toMatchObject([{ revision: rev }]);
    expect(failureThenSuccess(h.history())).toEqual([]);
    expect(liveInstance(h, 'flaky')).toEqual(pids.flaky);
    expect(h.component('flaky')?.state).toBe('running');

    // At most once per failure: another restart (kill -9) resumes and writes nothing.
    const after = rowsText(h.history());
    await endAgent(agent, 'kill -9');
    agent = start();
    await settleAfterRestart(h, agent, rev);
    await agent.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
    expect(rowsText(h.history())).toEqual(after);
    expect(liveInstance(h, 'flaky')).toEqual(pids.flaky);
    expect(h.component('flaky')?.state).toBe('running');
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// 2. An apply interrupted at each crash point, then a restart.

type Kind = 'cannot get healthy' | 'good';

/**
 * R0: db and app, both healthy. R1 bumps app (stopped and started again: after-stop is reached) and adds `extra`, a
 * plain process that is healthy 200 ms after its start (after-healthy is reached even when app never is). In the
 * `cannot get healthy` revision app's new version has a check that never passes.
 */
async function interruptedApply(point: ApplyCrashPoint, kind: Kind): Promise<void> {
  const [closed] = (await freePorts(1)) as [number];
  const fx = await stackFixture({ components: () => [sleeper('db'), sleeper('app')] });
  const h = new AgentHarness();
  const start = (env?: Record<string, string>) =>
    h.start({ dir: fx.dir, plan: fx.plan, trustArgs: fx.trustArgs, ...(env && { env }) });
  try {
    const first = start();
    expect((await first.waitForLog(is.applyEnd, 30_000, 0, 'the apply of R0')).msg).toBe('all components running');
    await rowsFinished(h, await fx.revisionId());
    await first.kill9();

    const app = fx.spec('app');
    app.version = '2.0.0';
    if (kind === 'cannot get healthy') app.health = never(closed);
    fx.add(sleeper('extra'));
    const rev = await fx.revisionId();

    const doomed = start({ KEYSTONE_CRASH_AT: point });
    const died = await doomed.waitForExit(30_000);
    expect(died.signal, `the agent killed itself at ${point}\n${doomed.tail()}`).toBe('SIGKILL');
    const began = rowsOf(h, rev);
    expect(began, 'the apply began: one unfinished row').toMatchObject([{ revision: rev }]);
    expect(began[0]!.finishedAt).toBeUndefined();

    const again = start();
    await settleAfterRestart(h, again, rev);
    const want = kind === 'good' ? 'success' : 'failure';
    // The row that began before the kill is finished with the true result; no "interrupted" failure, no second row.
    expect(
      rowsOf(h, rev).map((e) => ({ id: e.id, outcome: e.outcome })),
      `the history of ${rev} after the restart (row #${began[0]!.id} began before the kill):\n${rowsText(h.history()).join('\n')}`,
    ).toEqual([{ id: began[0]!.id, outcome: want }]);
    expect(
      h.history().filter((e) => e.summary?.startsWith('interrupted')),
      'no "interrupted" row',
    ).toEqual([]);
    expect(failureThenSuccess(h.history())).toEqual([]);
    expect(again.exit, 'the restarted agent runs on').toBeUndefined();
    if (kind === 'good') {
      for (const c of h.components()) expect(c.state, `${c.name}: ${c.reason ?? ''}`).toBe('running');
      expect(h.component('app')?.version).toBe('2.0.0');
    } else {
      expect(h.component('app')?.state, 'app never got healthy').not.toBe('running');
      expect(rowsOf(h, rev)[0]!.summary).toContain('app');
      for (const name of ['db', 'extra']) expect(h.component(name)?.state, name).toBe('running');
    }
  } finally {
    await h.cleanup();
    fx.cleanup();
  }
}

describe.concurrent(
  'an apply interrupted by kill -9 at each crash point, then a restart: the same row, the true result',
  () => {
    for (const point of CRASH_POINTS) {
      it(
        `a revision whose component cannot get healthy, killed at ${point}: one row, failure, never a success`,
        () => interruptedApply(point, 'cannot get healthy'),
        90_000,
      );
      it(
        `a good revision, killed at ${point}: the row that began is finished success, no "interrupted" failure`,
        () => interruptedApply(point, 'good'),
        90_000,
      );
    }
  },
);

describe(
  'killed inside the health check of adopted instances (KEYSTONE_CRASH_AT=adopted-health-wait)',
  { timeout: 90_000 },
  () => {
    let fx: StackFixture | undefined;
    let h: AgentHarness | undefined;
    afterEach(async () => {
      await h?.cleanup();
      fx?.cleanup();
      fx = undefined;
      h = undefined;
    });

    it('a healthy stack: the agent dies in the wait; started again, it restarts nothing and the history is unchanged', async () => {
      fx = await stackFixture({ components: () => [sleeper('db'), checked('api')] });
      h = new AgentHarness();
      const start = (env?: Record<string, string>) =>
        h!.start({ dir: fx!.dir, plan: fx!.plan, trustArgs: fx!.trustArgs, ...(env && { env }) });
      const rev = await fx.revisionId();

      const first = start();
      expect((await first.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
      await rowsFinished(h, rev);
      const history = rowsText(h.history());
      expect(rowsOf(h, rev).map((e) => e.outcome)).toEqual(['success']);
      const pids = { db: liveInstance(h, 'db'), api: liveInstance(h, 'api') };
      await endAgent(first, 'SIGTERM');

      const doomed = start({ KEYSTONE_CRASH_AT: 'adopted-health-wait' });
      const died = await doomed.waitForExit(20_000);
      expect(
        died.signal,
        `the agent killed itself inside the health check of adopted instances\n${doomed.tail()}`,
      ).toBe('SIGKILL');
      expect(doomed.lines(is.msg(CHECKING)), `"${CHECKING}" comes before the wait`).toHaveLength(1);
      expect(doomed.lines(is.msg(CHECKED)), 'killed before the wait ended').toEqual([]);
      expect(rowsText(h.history())).toEqual(history);

      const again = start();
      await settleAfterRestart(h, again, rev);
      const done = await again.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
      expect(listField(done, 'healthy')).toEqual(['api', 'db']);
      expect(listField(done, 'unhealthy')).toEqual([]);
      await again.waitForLog(startsWith(RESUMED), 10_000, 0, 'the revision the device ran, resumed');
      expect(again.lines(startsWith(RESUMED)), 'resumed once').toHaveLength(1);
      expect({ db: liveInstance(h, 'db'), api: liveInstance(h, 'api') }, 'nothing healthy was restarted').toEqual(pids);
      for (const agent of [doomed, again])
        expect(
          agent.lines((l) => l.state === 'starting' || l.state === 'stopping' || l.state === 'installing'),
        ).toEqual([]);
      for (const c of h.components()) expect(c.state, c.name).toBe('running');
      expect(rowsText(h.history()), 'the history is unchanged').toEqual(history);
    });
  },
);

// ---------------------------------------------------------------------------------------------------------------------
// 3. Composites: all or nothing, and the failure stands across restarts.

const FAST = ['interval = "200ms"', 'timeout = "1s"', 'failure_threshold = 50'];

/** app/api: fake-reports on a configured port, exported (as in composite-rollback.e2e.test.ts). */
const compositeApi = (repo: CompositeRepo) =>
  [
    '[metadata]',
    'name = "com.test.api"',
    'version = "0.9.0"',
    '[[artifacts]]',
    'uri = "../artifacts/fake-reports.mjs"',
    `sha256 = ${q(repo.sha('fake-reports.mjs'))}`,
    '[config]',
    'port = 1',
    '[exports]',
    'port = "{{config.port}}"',
    '[lifecycle.run]',
    '[lifecycle.run.exec]',
    'command = "node"',
    'args = ["fake-reports.mjs", "--port", "{{config.port}}", "--title", "t", "--version-label", "0.9.0"]',
    '[lifecycle.run.health]',
    'check = "http://127.0.0.1:{{config.port}}/health"',
    ...FAST,
    '',
  ].join('\n');

/** app/side: binds the api's port; with `broken`, a check on a closed port that never passes (2 s). */
const compositeSide = (broken?: number) =>
  [
    '[metadata]',
    'name = "com.test.side"',
    'version = "1.0.0"',
    '[lifecycle.run]',
    '[lifecycle.run.exec]',
    'command = "sleep"',
    'args = ["1000", "{{deps.api.exports.port}}"]',
    ...(broken
      ? [
          '[lifecycle.run.health]',
          `check = "tcp://127.0.0.1:${broken}"`,
          'interval = "200ms"',
          'timeout = "150ms"',
          'failure_threshold = 10',
        ]
      : []),
    '[[dependencies]]',
    'name = "com.test.api"',
    '',
  ].join('\n');

const APP = [
  '[metadata]',
  'name = "com.test.app"',
  'version = "2.0.0"',
  '[[members]]',
  'name = "api"',
  'recipe = "recipes/api.toml"',
  '[[members]]',
  'name = "side"',
  'recipe = "recipes/side.toml"',
  '',
].join('\n');
const compositePlan = (port: number) =>
  `[[components]]\nname = "app"\nrecipe = "recipes/app.toml"\n[components.config.api]\nport = ${port}\n`;

describe('a composite whose new member never gets healthy, across agent restarts', { timeout: 120_000 }, () => {
  let ca: CompositeAgent | undefined;
  let repo: CompositeRepo | undefined;
  afterEach(async () => {
    await ca?.cleanup();
    repo?.cleanup();
    ca = undefined;
    repo = undefined;
  });

  it('rolled back, apply failure; after a SIGTERM and a kill -9 restart the failure stands, at the previous members, no success row', async () => {
    const [p1, p2, closed] = (await freePorts(3)) as [number, number, number];
    repo = compositeRepo();
    repo.write({
      'recipes/api.toml': compositeApi(repo),
      'recipes/side.toml': compositeSide(),
      'recipes/app.toml': APP,
      [repo.plan]: compositePlan(p1),
    });
    ca = new CompositeAgent(repo);
    expect((await ca.start()).msg).toBe('all components running');
    const r1 = await repo.revisionId();
    await rowsFinished(ca.h, r1);

    const { end, revision: r2 } = await ca.push({
      'recipes/side.toml': compositeSide(closed),
      [repo.plan]: compositePlan(p2),
    });
    expect(end.msg).toMatch(/^apply failed/);
    const failed = await rowsFinished(ca.h, r2);
    expect(failed).toMatchObject([{ outcome: 'failure' }]);
    expect(failed[0]!.summary).toContain('app rolled back to its previous members');
    const previous = { api: { 'config.port': String(p1) }, side: { 'deps.api.exports.port': String(p1) } };
    expect(ca.h.component('app/api')?.inputs).toEqual(previous.api);
    expect(ca.h.component('app/side')?.inputs).toEqual(previous.side);
    const pids = { api: liveInstance(ca.h, 'app/api'), side: liveInstance(ca.h, 'app/side') };
    const history = rowsText(ca.h.history());
    expect(rowsOf(ca.h, r1)).toMatchObject([{ outcome: 'success' }]);

    for (const how of ['SIGTERM', 'kill -9'] as const) {
      await endAgent(ca.agent, how);
      ca.agent = ca.h.start({ dir: repo.dir, plan: repo.plan, trustArgs: repo.trustArgs });
      await settleAfterRestart(ca.h, ca.agent, r2);
      expect(rowsText(ca.h.history()), `the history after the ${how} restart: the failure stands, nothing new`).toEqual(
        history,
      );
      expect(failureThenSuccess(ca.h.history())).toEqual([]);
      // Still at the members that last ran healthy together, the same processes: nothing was restarted.
      expect(ca.h.component('app/api')?.inputs).toEqual(previous.api);
      expect(ca.h.component('app/side')?.inputs).toEqual(previous.side);
      expect(
        { api: liveInstance(ca.h, 'app/api'), side: liveInstance(ca.h, 'app/side') },
        `the members after the ${how} restart`,
      ).toEqual(pids);
      expect(ca.h.components().map((c) => c.state)).toEqual(['running', 'running']);
      await ca.agent.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
      expect(rowsText(ca.h.history())).toEqual(history);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// 4. Manual applies and an operator restart.

describe(
  'a manual apply that fails, an agent restart, and an operator restart that gets the component healthy',
  { timeout: 120_000 },
  () => {
    let fx: StackFixture | undefined;
    let h: AgentHarness | undefined;
    afterEach(async () => {
      await h?.cleanup();
      fx?.cleanup();
      fx = undefined;
      h = undefined;
    });

    it('`keystonectl apply` exits 1 (twice: a failure is never followed by a success); restarted, the device reports failure, not success; `keystonectl restart` writes one `recovered` row beside the failure', async () => {
      fx = await stackFixture({ components: () => [sleeper('db')] });
      h = new AgentHarness();
      let port = 0;
      let agent: AgentProcess;
      // The directory's watcher never settles (10 minutes): the directory's content is looked at only when the agent starts.
      const start = async () => {
        [port] = (await freePorts(1)) as [number];
        return h!.start({
          dir: fx!.dir,
          plan: fx!.plan,
          trustArgs: fx!.trustArgs,
          args: ['--settle', '10m', '--listen', `127.0.0.1:${port}`],
        });
      };
      const ctl = async (...args: string[]) =>
        within(
          runCtl([...args, '--agent', `http://127.0.0.1:${port}`, '--token', await tokenOf(h!)], fx!.dir),
          30_000,
          `keystonectl ${args.join(' ')}`,
        );
      const listening = (a: AgentProcess) => a.waitForLog(is.msg('HTTP API listening'), 15_000, 0, 'the API');

      agent = await start();
      expect((await agent.waitForLog(is.applyEnd, 30_000, 0, 'the first apply')).msg).toBe('all components running');
      await listening(agent);
      const first = await fx.revisionId();
      await rowsFinished(h, first);

      // The operator adds a component that cannot get healthy yet and applies it by hand.
      fx.add(untilOk('flaky'));
      const applied = await ctl('apply', fx.plan, '--allow-unsigned');
      expect(applied.code, applied.stdout + applied.stderr).toBe(1);
      expect(applied.stdout).toMatch(/\[apply\] outcome=failure converged=false msg=failed: flaky/);
      const manual = h.history()[0]!.revision;
      expect(manual).toMatch(/^manual:/);
      expect(await rowsFinished(h, manual)).toMatchObject([{ outcome: 'failure' }]);

      // The same revision again (a new attempt): flaky is untouched and still unhealthy, so it fails again.
      const again = await ctl('apply', fx.plan, '--allow-unsigned');
      expect(again.stdout, 'the second apply of the same revision').toMatch(
        /\[apply\] outcome=failure converged=false/,
      );
      expect(again.code, again.stdout + again.stderr).toBe(1);
      expect((await rowsFinished(h, manual)).map((e) => e.outcome)).toEqual(['failure', 'failure']);
      expect(failureThenSuccess(h.history())).toEqual([]);
      const flaky = liveInstance(h, 'flaky');

      // An agent restart: the directory's content (db and flaky) is a new attempt; flaky, adopted, is probed and fails it.
      await endAgent(agent, 'SIGTERM');
      agent = await start();
      const dirRev = await fx.revisionId();
      await settleAfterRestart(h, agent, dirRev);
      expect(
        rowsOf(h, manual).map((e) => e.outcome),
        'the manual apply keeps its failures',
      ).toEqual(['failure', 'failure']);
      expect(
        rowsOf(h, dirRev).map((e) => e.outcome),
        `the directory's revision with flaky unhealthy\n${rowsText(h.history()).join('\n')}`,
      ).toEqual(['failure']);
      expect(rowsOf(h, first).map((e) => e.outcome)).toEqual(['success']);
      expect(failureThenSuccess(h.history())).toEqual([]);
      expect(liveInstance(h, 'flaky'), 'flaky adopted').toEqual(flaky);
      expect(h.component('flaky')?.state).toBe('unhealthy');
      await listening(agent);

      // The operator fixes what flaky needs and restarts it: it gets healthy. A recovery, beside the failure.
      writeFileSync(join(h.workDir('flaky'), 'go'), '');
      const restarted = await ctl('restart', 'flaky');
      expect(restarted.code, restarted.stdout + restarted.stderr).toBe(0);
      expect(liveInstance(h, 'flaky').pid).not.toBe(flaky.pid);
      expect(h.component('flaky')?.state).toBe('running');
      const recovered = await until(
        () => rowsOf(h!, dirRev).find((e) => e.outcome === 'recovered'),
        15_000,
        `a \`recovered\` row for ${dirRev}`,
      );
      expect(
        rowsOf(h, dirRev).map((e) => e.outcome),
        'the apply row stays failure; the recovery is beside it',
      ).toEqual(['recovered', 'failure']);
      expect(recovered.summary).toBeTruthy();
      expect(rowsOf(h, manual).map((e) => e.outcome)).toEqual(['failure', 'failure']);
      expect(failureThenSuccess(h.history())).toEqual([]);
      const history = rowsText(h.history());
      const shown = await ctl('history');
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`${dirRev}\\s+recovered`));
      expect(shown.stdout).toMatch(new RegExp(`${dirRev}\\s+failure`));

      // kill -9 and a new start: the device runs that revision; it is resumed, and nothing is written.
      const now = liveInstance(h, 'flaky');
      await endAgent(agent, 'kill -9');
      agent = await start();
      await settleAfterRestart(h, agent, dirRev);
      await agent.waitForLog(is.msg(CHECKED), 10_000, 0, `"${CHECKED}"`);
      expect(rowsText(h.history())).toEqual(history);
      expect(liveInstance(h, 'flaky')).toEqual(now);
      expect(h.component('flaky')?.state).toBe('running');
    });
  },
);

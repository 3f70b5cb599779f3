// Targets in the repository (SPEC §13), through real agents: three devices with their own names and labels follow
// one signed Git repository, each takes its plan from fleet.toml, and each reports on the commit with its target.
// Then the fleet file moves a device to another target (an ordinary reconcile), leaves one without a target (it
// keeps running and reports error with its labels), a device restarted with other labels moves, and an invalid fleet
// file is refused by every device with nothing touched.
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { AgentHarness, type AgentProcess } from '../support/agent-harness.js';
import { until } from '../support/composite-fixture.js';
import { runCtl } from '../support/cli-run.js';
import { GIT_ENV } from '../support/git-env.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const run = promisify(execFile);
const git = async (cwd: string, ...args: string[]) =>
  (await run('git', ['-C', cwd, ...args], { env: GIT_ENV })).stdout.trim();

let fx: StackFixture;
const harness = new Map<string, AgentHarness>();
const agents = new Map<string, AgentProcess>();

const PLANS = {
  'plans/a.toml': '[[components]]\nname = "a"\nrecipe = "recipes/a.toml"\n',
  'plans/b.toml': '[[components]]\nname = "b"\nrecipe = "recipes/b.toml"\n',
};

async function commit(fleet: string, message: string): Promise<string> {
  fx.write();
  for (const [f, t] of Object.entries(PLANS)) writeFileSync(join(fx.dir, f), t);
  writeFileSync(join(fx.dir, 'fleet.toml'), fleet);
  await fx.sign();
  await git(fx.dir, 'add', '-A');
  await git(fx.dir, 'commit', '--quiet', '-m', message);
  return git(fx.dir, 'rev-parse', 'HEAD');
}

function start(device: string, labels: string[], extra: string[] = []): AgentProcess {
  let h = harness.get(device);
  if (!h) harness.set(device, (h = new AgentHarness()));
  const agent = h.start({
    repo: fx.dir,
    plan: undefined,
    trustArgs: fx.trustArgs,
    args: [
      '--ref',
      'main',
      '--poll',
      '1s',
      '--device',
      device,
      ...labels.flatMap((l) => ['--label', l]),
      '--status',
      'git-notes',
      ...extra,
    ],
  });
  agents.set(device, agent);
  return agent;
}

const h = (device: string) => harness.get(device)!;
const running = (device: string) => Object.keys(h(device).pidsOf()).sort();
const lineOf = async (commitId: string, device: string) =>
  (await readStatusNotes(join(fx.dir, '.git'), commitId)).find((l) => l.context === `keystone/${device}`);
const reported = (commitId: string, device: string, state: string) =>
  until(
    async () => {
      const l = await lineOf(commitId, device);
      return l?.state === state ? l : undefined;
    },
    30_000,
    `${device}'s ${state} note on ${commitId.slice(0, 8)}`,
  );

const fleetFile = (rest: string, gwDevices = '') => `[[targets]]
name = "gw"
selector = { role = "gateway" }
${gwDevices}plan = "plans/a.toml"

[[targets]]
name = "rest"
selector = ${rest}
plan = "plans/b.toml"
`;

beforeAll(async () => {
  fx = await stackFixture({ signed: true, components: () => [sleeper('a'), sleeper('b')] });
  await git(fx.dir, 'init', '--quiet', '--initial-branch=main');
});

afterAll(async () => {
  for (const x of harness.values()) await x.cleanup();
  fx?.cleanup();
});

describe('a fleet of three devices on two targets', { timeout: 180_000 }, () => {
  let first: string;
  const pids = new Map<string, Record<string, number>>();

  it('each device takes its plan from fleet.toml by its labels, and reports with its target', async () => {
    first = await commit(fleetFile('{}'), 'two targets');
    start('d1', ['role=gateway']);
    start('d2', []);
    start('d3', ['role=camera']);
    const lines = await Promise.all(['d1', 'd2', 'd3'].map((d) => reported(first, d, 'success')));
    expect(lines.map((l) => l.fields.target)).toEqual(['gw', 'rest', 'rest']);
    expect(running('d1')).toEqual(['a']);
    expect(running('d2')).toEqual(['b']);
    expect(running('d3')).toEqual(['b']);
    expect(h('d1').appliedRevision()).toMatchObject({ id: first, target: 'gw', planFile: 'plans/a.toml' });
    expect(h('d3').appliedRevision()).toMatchObject({ id: first, target: 'rest', planFile: 'plans/b.toml' });
    expect(agents.get('d1')!.lines((l) => l.msg === 'fleet target')[0]).toMatchObject({
      device: 'd1',
      target: 'gw',
      plan: 'plans/a.toml',
    });
    for (const d of ['d1', 'd2', 'd3']) pids.set(d, h(d).pidsOf());
  });

  it('the fleet file moves d2 to gw (a reconcile from b to a) and leaves d3 without a target (it keeps b, reports error)', async () => {
    const second = await commit(
      fleetFile('{ role = "sensor" }', 'devices = ["d2"]\n'),
      'd2 to gw; rest only for sensors',
    );
    const d2 = await reported(second, 'd2', 'success');
    expect(d2.fields.target).toBe('gw');
    await until(() => running('d2').join() === 'a' || undefined, 20_000, 'd2 to run a only');
    const d3 = await reported(second, 'd3', 'error');
    expect(d3.fields.target).toBeUndefined();
    expect(d3.description).toContain('no target in fleet.toml matches device d3 (role=camera)');
    expect(h('d3').pidsOf()).toEqual(pids.get('d3'));
    expect(h('d3').history()[0]).toMatchObject({ revision: second, outcome: 'rejected' });
    // d1 had nothing to change: same target, same plan, same process.
    expect((await reported(second, 'd1', 'success')).fields.target).toBe('gw');
    expect(h('d1').pidsOf()).toEqual(pids.get('d1'));
  });

  it('d1 restarted with other labels moves to the other target', async () => {
    const head = await git(fx.dir, 'rev-parse', 'HEAD');
    await agents.get('d1')!.stop();
    const agent = start('d1', ['role=sensor']);
    await until(
      () => agent.lines((l) => l.msg === 'fleet target' && l.target === 'rest').length > 0 || undefined,
      30_000,
      'd1 to take target rest',
    );
    // Its labels changed since the last apply: it looked at once, not at its place in the poll interval.
    expect(
      agent.lines((l) => typeof l.msg === 'string' && l.msg.includes('labels or --plan changed since the last apply')),
    ).toHaveLength(1);
    expect(
      agent.lines((l) => typeof l.msg === 'string' && l.msg.startsWith('first look at the Git source in')),
    ).toEqual([]);
    await until(() => running('d1').join() === 'b' || undefined, 30_000, 'd1 to run b only');
    await until(
      async () => {
        const l = await lineOf(head, 'd1');
        return (l?.state === 'success' && l.fields.target === 'rest') || undefined;
      },
      30_000,
      "d1's success report with target rest",
    );
    for (const d of ['d1', 'd2', 'd3']) pids.set(d, h(d).pidsOf());
  });

  it('keystonectl fleet status shows the three, per target, from their own reports', async () => {
    const head = await git(fx.dir, 'rev-parse', 'HEAD');
    const r = await runCtl(['fleet', 'status', '--repo', fx.dir, '--json'], fx.dir);
    expect(r.code, r.stderr).toBe(0);
    const view = JSON.parse(r.stdout) as {
      commit: string;
      targets: Array<{ name: string; success: number; error: number; members: string[] }>;
    };
    expect(view.commit).toBe(head);
    const t = Object.fromEntries(view.targets.map((x) => [x.name, x]));
    expect(t.gw).toMatchObject({ success: 1, members: ['d2'] });
    expect(t.rest).toMatchObject({ success: 1, members: ['d1'] });
    // d3 matches no target: its error report carries none.
    expect(view.targets.find((x) => x.members.includes('d3'))).toMatchObject({ error: 1 });
  });

  it('--status-repo: a device reports to a reports repository of its own, not to the one it follows', async () => {
    const head = await git(fx.dir, 'rev-parse', 'HEAD');
    const reports = join(fx.dir, '..', `${basename(fx.dir)}-reports.git`);
    await run('git', ['init', '--quiet', '--bare', reports]);
    start('d4', ['role=gateway'], ['--status-repo', reports]);
    await until(
      async () =>
        (await readStatusNotes(reports, head)).find((l) => l.context === 'keystone/d4' && l.state === 'success'),
      30_000,
      "d4's report in the reports repository",
    );
    expect(await lineOf(head, 'd4')).toBeUndefined();
    await agents.get('d4')!.stop();
    rmSync(reports, { recursive: true, force: true });
  });

  it('an invalid fleet file is refused by every device, and nothing that runs is touched', async () => {
    const bad = await commit(
      fleetFile('{ role = "sensor" }').replace('name = "rest"', 'name = "gw"'),
      'two targets named gw',
    );
    for (const d of ['d1', 'd2', 'd3']) {
      const l = await reported(bad, d, 'error');
      expect(l.description).toContain('fleet.toml:7: targets[1].name: target "gw" is declared twice');
      expect(h(d).history()[0]).toMatchObject({ revision: bad, outcome: 'rejected' });
      expect(h(d).pidsOf()).toEqual(pids.get(d));
    }
  });
});

// Staged rollouts (SPEC §14) through real agents over a real Git smart-HTTP server (`git http-backend`): five
// devices in three waves (canary d1; early d2, d3 and any device labelled ring=early; everyone the rest), a bake of a
// few seconds, any failure halts. A good commit walks the waves in order and never early; a bad one halts at the
// canary and no other device applies it; a fix rolls out from the canary again; a revert to a known-good state
// reaches every wave at once; a burst ends with every device on the newest commit; an agent restarted during a
// bake keeps its place; a server outage during a bake does not open the gate; a device whose labels change moves
// waves. The order is checked on one machine's clock: each device's "gate open" log line against the canary's
// success report (the agents themselves measure the bake on the server's clock, from its Date headers).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { parseRolloutRef } from '../../src/report/rollout-refs.js';
import { STATE_DB_FILE } from '../../src/store/state-store.js';
import { AgentHarness, type AgentProcess, type LogLine } from '../support/agent-harness.js';
import { until } from '../support/composite-fixture.js';
import { runCtl } from '../support/cli-run.js';
import { startGitHttpServer, type GitHttpServer } from '../support/git-http-server.js';
import { GIT_ENV } from '../support/git-env.js';
import { freePorts, neverHealthy, sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const run = promisify(execFile);
const git = async (cwd: string, ...args: string[]) =>
  (await run('git', ['-C', cwd, ...args], { env: GIT_ENV })).stdout.trim();

const BAKE_MS = 4000;
const DEVICES = ['d1', 'd2', 'd3', 'd4', 'd5'];
const FLEET = `[[targets]]
name = "all"
selector = {}
plan = "plans/stack.toml"

[rollout]
waves = [
  { name = "canary", devices = ["d1"] },
  { name = "early", devices = ["d2", "d3"], selector = { ring = "early" } },
  { name = "everyone", percent = 100 },
]
bake = "4s"
min_success = 2
abort_failure_percent = 0
`;

let root: string;
let port: number;
let server: GitHttpServer;
let bare: string;
let fx: StackFixture;
const harness = new Map<string, AgentHarness>();
const agents = new Map<string, AgentProcess>();

async function push(message: string): Promise<string> {
  fx.write();
  writeFileSync(join(fx.dir, 'fleet.toml'), FLEET);
  await fx.sign();
  await git(fx.dir, 'add', '-A');
  await git(fx.dir, 'commit', '--quiet', '--allow-empty', '-m', message);
  await git(fx.dir, 'push', '--quiet', bare, 'HEAD:refs/heads/main');
  return git(fx.dir, 'rev-parse', 'HEAD');
}

function start(device: string, labels: string[] = []): AgentProcess {
  let h = harness.get(device);
  if (!h) harness.set(device, (h = new AgentHarness()));
  const agent = h.start({
    repo: server.url('fleet'),
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
      '--listen',
      'none',
    ],
  });
  agents.set(device, agent);
  return agent;
}

const ag = (d: string) => agents.get(d)!;
const applied = (d: string) => harness.get(d)!.appliedRevision()?.id;
const noteOf = async (commit: string, device: string) =>
  (await readStatusNotes(bare, commit)).find((l) => l.context === `keystone/${device}`);
const reported = (commit: string, device: string, state: string, deadline = 60_000) =>
  until(
    async () => {
      const l = await noteOf(commit, device);
      return l?.state === state ? l : undefined;
    },
    deadline,
    `${device}'s ${state} note on ${commit.slice(0, 8)}`,
  );
const gateOpen = (d: string, commit: string): LogLine | undefined =>
  ag(d).lines((l) => l.msg === 'rollout gate open' && l.revision === commit)[0];
const waitGateOpen = (d: string, commit: string) =>
  until(() => gateOpen(d, commit), 60_000, `${d}'s gate to open for ${commit.slice(0, 8)}`);
const heldLines = (d: string, commit: string) =>
  ag(d).lines((l) => l.revision === commit && typeof l.msg === 'string' && l.msg.startsWith('held: '));
async function rolloutRefs(): Promise<ReturnType<typeof parseRolloutRef>[]> {
  const out = await git(bare, 'for-each-ref', '--format=%(refname)', 'refs/keystone-rollout/');
  return out.split('\n').filter(Boolean).map(parseRolloutRef);
}

/** Every device in `later` opened its gate a bake after the first success of the wave before (one machine's clock). */
async function expectOrdered(commit: string, before: string[], later: string[]): Promise<void> {
  const successes = await Promise.all(before.map((d) => reported(commit, d, 'success')));
  const firstSuccess = Math.min(...successes.map((l) => Date.parse(l.time)));
  for (const d of later) {
    const open = await waitGateOpen(d, commit);
    // The server's Date has whole seconds: the gate may open up to 1 s before a full bake on this clock, never more.
    expect(
      open.t,
      `${d} opened ${open.t - firstSuccess} ms after ${before.join('/')}'s first success`,
    ).toBeGreaterThanOrEqual(firstSuccess + BAKE_MS - 1000);
  }
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-rollout-'));
  [port] = (await freePorts(1)) as [number];
  server = await startGitHttpServer({ root: join(root, 'srv'), port });
  bare = server.createRepository('fleet', 'main');
  fx = await stackFixture({ signed: true, components: () => [sleeper('a')] });
  await git(fx.dir, 'init', '--quiet', '--initial-branch=main');
});

afterAll(async () => {
  for (const h of harness.values()) await h.cleanup();
  await server?.stop();
  fx?.cleanup();
  rmSync(root, { recursive: true, force: true });
});

describe('a staged rollout over five real agents', { timeout: 420_000 }, () => {
  let good: string;

  it('a good commit walks the waves in order, never early', async () => {
    good = await push('first release');
    for (const d of DEVICES) start(d);
    await expectOrdered(good, ['d1'], ['d2', 'd3']);
    await expectOrdered(good, ['d2', 'd3'], ['d4', 'd5']);
    for (const d of DEVICES)
      await until(() => applied(d) === good || undefined, 30_000, `${d} to run the first release`);
    // Each device keeps the wave it applied the commit in (GET /v1/revision and the dashboard show it).
    expect(DEVICES.map((d) => harness.get(d)!.appliedRevision()?.wave)).toEqual([
      'canary',
      'early',
      'early',
      'everyone',
      'everyone',
    ]);
    // Each device said where it stands, and reported held (with the reason) before its turn.
    expect(ag('d4').lines((l) => l.msg === 'this device in the fleet')[0]).toMatchObject({
      device: 'd4',
      target: 'all',
      wave: 'everyone',
    });
    expect(heldLines('d4', good).map((l) => l.msg)).toContainEqual(
      expect.stringMatching(/^held: waiting for wave early \([012] of 2 successes(, baking \ds left)?\)$/),
    );
    expect((await reported(good, 'd5', 'success')).fields).toMatchObject({ target: 'all', wave: 'everyone' });
    // Rollout refs: one per device for this commit, in its wave (pushed with each success note).
    const want = [
      'd1:canary:success',
      'd2:early:success',
      'd3:early:success',
      'd4:everyone:success',
      'd5:everyone:success',
    ];
    await until(
      async () => {
        const refs = (await rolloutRefs()).filter((r) => r?.commit === good);
        return (
          JSON.stringify(refs.map((r) => `${r!.device}:${r!.wave}:${r!.state}`).sort()) === JSON.stringify(want) ||
          undefined
        );
      },
      30_000,
      `the rollout refs ${want.join(' ')}`,
    );
  });

  let bad: string;
  it('a bad canary halts the rollout: no device outside the canary applies it', async () => {
    const port0 = (await freePorts(1))[0]!;
    fx.components = [{ ...neverHealthy('a', port0), version: '2.0.0' }];
    bad = await push('a release that never gets healthy');
    await reported(bad, 'd1', 'failure');
    for (const d of ['d2', 'd3', 'd4', 'd5']) {
      const l = await reported(bad, d, 'error');
      expect(l.description).toContain('halted at canary: 1 of 1 failed');
    }
    for (const d of ['d2', 'd3', 'd4', 'd5']) {
      expect(applied(d)).toBe(good);
      expect(
        harness
          .get(d)!
          .history()
          .some((h) => h.revision === bad),
      ).toBe(false);
    }
    // The fleet view says so, from the same reports over the same server.
    const r = await runCtl(['fleet', 'status', '--repo', server.url('fleet'), '--commit', bad, '--json'], fx.dir);
    expect(r.code, r.stderr).toBe(0);
    const view = JSON.parse(r.stdout) as {
      rollout: { halted: { wave: string; failed: number; of: number }; waves: Array<{ name: string; state: string }> };
    };
    expect(view.rollout.halted).toEqual({ wave: 'canary', failed: 1, of: 1 });
    expect(view.rollout.waves.map((w) => w.state)).toEqual(['halted', 'halted', 'halted']);
    const text = await runCtl(['fleet', 'status', '--repo', server.url('fleet'), '--commit', bad], fx.dir);
    expect(text.stdout).toContain('halted at canary: 1 of 1 failed');
  });

  it('a fix pushed after the halt rolls out from the canary', async () => {
    fx.components = [{ ...sleeper('a'), version: '3.0.0' }];
    const fix = await push('the fix');
    await expectOrdered(fix, ['d1'], ['d2', 'd3']);
    await expectOrdered(fix, ['d2', 'd3'], ['d4', 'd5']);
    for (const d of DEVICES) await until(() => applied(d) === fix || undefined, 30_000, `${d} to run the fix`);
  });

  it('a revert to a known-good state reaches every wave at once', async () => {
    fx.components = [sleeper('a')];
    const revert = await push('back to the first release');
    for (const d of DEVICES) await until(() => applied(d) === revert || undefined, 30_000, `${d} to run the revert`);
    for (const d of DEVICES) {
      // Its log line may still be in the pipe when the store says it runs the revert: wait for it, then look back.
      expect((await waitGateOpen(d, revert)).reason).toContain('ran successfully before');
      expect(heldLines(d, revert)).toEqual([]);
    }
  });

  it('a burst during a rollout ends with every device on the newest commit', async () => {
    fx.components = [{ ...sleeper('a'), version: '4.0.0' }];
    await push('burst one');
    fx.components = [{ ...sleeper('a'), version: '4.0.1' }];
    const newest = await push('burst two');
    for (const d of DEVICES)
      await until(() => applied(d) === newest || undefined, 90_000, `${d} to run the newest commit of the burst`);
  });

  it('an agent restarted during a bake keeps its place: the bake is not started again', async () => {
    fx.components = [{ ...sleeper('a'), version: '5.0.0' }];
    const c = await push('restart during the bake');
    await reported(c, 'd1', 'success');
    const baking = await until(
      () => heldLines('d2', c).find((l) => String(l.msg).includes('baking')),
      30_000,
      'd2 to bake',
    );
    // A part of the bake passes first, so that what is left after the restart tells a kept bake (≤ 3s, rounded up)
    // from one started again (4s): a fast restart alone could leave 3.2 s, shown as 4s.
    await until(() => Date.now() - baking.t >= 1500 || undefined, 10_000, 'a part of the bake to pass');
    await ag('d2').stop();
    const restarted = start('d2');
    // Its first read of a wave is a sample, which may miss d1 and says so; the first line about the bake counts.
    const first = await until(
      () =>
        restarted.lines(
          (l) => l.revision === c && (l.msg === 'rollout gate open' || String(l.msg).includes('successes')),
        )[0],
      30_000,
      'the restarted d2 to look at the gate',
    );
    // Either already baked, or baking with less than the whole bake left: the first success it saw before is kept.
    if (first.msg !== 'rollout gate open') expect(first.msg).toMatch(/(baking [0-3]s left|baked)\)$/);
    await until(() => applied('d2') === c || undefined, 30_000, 'd2 to apply it');
  });

  it('a server outage during a bake does not open the gate early', async () => {
    fx.components = [{ ...sleeper('a'), version: '6.0.0' }];
    const c = await push('an outage during the bake');
    await reported(c, 'd1', 'success');
    const baking = await until(
      () => heldLines('d3', c).find((l) => String(l.msg).includes('baking')),
      30_000,
      'd3 to bake',
    );
    await server.stop();
    // Reads fail for longer than the bake: d3 keeps what it runs all along.
    await until(
      () =>
        ag('d3').lines((l) => l.msg?.startsWith('cannot read the fleet') === true && l.t > baking.t + BAKE_MS + 1000)
          .length > 0 || undefined,
      30_000,
      'd3 to fail reading past the bake',
    );
    expect(applied('d3')).not.toBe(c);
    expect(gateOpen('d3', c)).toBeUndefined();
    server = await startGitHttpServer({ root: join(root, 'srv'), port });
    await until(() => applied('d3') === c || undefined, 60_000, 'd3 to apply it once the server is back');
    for (const d of DEVICES) await until(() => applied(d) === c || undefined, 60_000, `${d} to run it`);
  });

  it('a device whose labels change moves waves', async () => {
    await ag('d5').stop();
    const d5 = start('d5', ['ring=early']);
    await until(
      () => d5.lines((l) => l.msg === 'this device in the fleet' && l.wave === 'early')[0],
      30_000,
      'd5 to say it is in wave early',
    );
    fx.components = [{ ...sleeper('a'), version: '7.0.0' }];
    const c = await push('d5 in early');
    // d5 goes with early, after the canary: before everyone (d4).
    const open5 = await waitGateOpen('d5', c);
    expect(open5.reason).toContain('wave canary');
    const open4 = await waitGateOpen('d4', c);
    expect(open4.reason).toContain('wave early');
    expect((await rolloutRefs()).find((r) => r?.commit === c && r.device === 'd5')?.wave).toBe('early');
    for (const d of DEVICES) await until(() => applied(d) === c || undefined, 60_000, `${d} to run it`);
  });

  // Issue 27 (SPEC §5): a restarted canary used to adopt its unhealthy instance, find nothing to change and report the
  // failed commit a success; with the canary's failure gone, the next device to look opened its gate.
  it('a failed canary stays failed across restarts of its agent (SIGTERM, then kill -9): the rollout stays halted and the next wave never applies', async () => {
    const port0 = (await freePorts(1))[0]!;
    fx.components = [{ ...neverHealthy('a', port0), version: '8.0.0' }];
    const c = await push('a release that never gets healthy, and a canary that restarts');
    await reported(c, 'd1', 'failure');
    for (const d of ['d2', 'd3'])
      expect((await reported(c, d, 'error')).description).toContain('halted at canary: 1 of 1 failed');
    const d1 = harness.get('d1')!;
    const appliesOfC = () =>
      d1
        .history()
        .filter(
          (e) => e.revision === c && (e.outcome === undefined || e.outcome === 'success' || e.outcome === 'failure'),
        )
        .reverse()
        .map((e) => e.outcome ?? 'unfinished');
    expect(appliesOfC()).toEqual(['failure']);
    const d2Before = applied('d2');

    for (const [how, down] of [
      ['SIGTERM', (a: AgentProcess) => a.stop()],
      ['kill -9', (a: AgentProcess) => a.kill9()],
    ] as const) {
      await down(ag('d1'));
      const restarted = start('d1');
      // Done with the commit it ran: resumed (SPEC §5), or applied again (the bug).
      const settled = await until(
        () =>
          restarted.lines(
            (l) =>
              String(l.msg).startsWith('resumed the revision applied last') ||
              l.msg === 'apply finished' ||
              l.msg === 'all components running' ||
              String(l.msg).startsWith('apply failed'),
          )[0],
        60_000,
        `the canary to take up the commit again after ${how}`,
      );
      const statuses = await until(
        () => {
          const rows = outboxOf(d1, c);
          return rows.every((r) => r.open === 0) ? rows : undefined;
        },
        30_000,
        `the canary's statuses of the commit delivered after ${how}`,
      );
      expect(
        appliesOfC(),
        `the canary's applies of the commit after ${how} (it said "${String(settled.msg)}")`,
      ).toEqual(['failure']);
      expect(
        statuses.map((r) => r.state),
        `the canary's statuses of the commit after ${how}`,
      ).not.toContain('success');
      expect((await noteOf(c, 'd1'))?.state, `the canary's note after ${how}`).toBe('failure');
    }
    // The canary's rollout ref for the commit is still its failure.
    expect((await rolloutRefs()).filter((r) => r?.commit === c && r.device === 'd1').map((r) => r!.state)).toEqual([
      'failure',
    ]);

    // The fleet view still says halted.
    const r = await runCtl(['fleet', 'status', '--repo', server.url('fleet'), '--commit', c, '--json'], fx.dir);
    expect(r.code, r.stderr).toBe(0);
    const view = JSON.parse(r.stdout) as { rollout: { halted?: { wave: string; failed: number; of: number } } };
    expect(view.rollout.halted).toEqual({ wave: 'canary', failed: 1, of: 1 });

    // A device of the next wave looks at the commit afresh (an upgrade restarts every agent): halted, never applied,
    // over longer than a bake and two of its gate's rechecks (--poll 1s).
    await ag('d2').stop();
    const d2 = start('d2');
    const looked = await until(
      () =>
        d2.lines(
          (l) => l.revision === c && (l.msg === 'rollout gate open' || String(l.msg).includes('halted at canary')),
        )[0],
      60_000,
      'the restarted d2 to look at the gate for the commit',
    );
    expect(looked.msg).toContain('halted at canary: 1 of 1 failed');
    const watchUntil = looked.t + BAKE_MS + 2 * 1000 + 1000;
    while (Date.now() < watchUntil) {
      expect(gateOpen('d2', c), 'the gate opened for d2').toBeUndefined();
      expect(
        harness
          .get('d2')!
          .history()
          .some((e) => e.revision === c && e.outcome !== 'rejected'),
        'd2 applied the commit',
      ).toBe(false);
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(applied('d2')).toBe(d2Before);
    const again = await runCtl(['fleet', 'status', '--repo', server.url('fleet'), '--commit', c, '--json'], fx.dir);
    expect((JSON.parse(again.stdout) as typeof view).rollout.halted).toEqual({ wave: 'canary', failed: 1, of: 1 });
  });
});

/** A device's statuses of `commit` in its outbox, oldest first (`open` 1 while not yet delivered nor given up). */
function outboxOf(h: AgentHarness, commit: string): Array<{ state: string; open: number }> {
  const db = new Sqlite(join(h.stateDir, STATE_DB_FILE), { readonly: true, fileMustExist: true, timeout: 5_000 });
  try {
    return db
      .prepare('SELECT state, next_attempt_at IS NOT NULL AS open FROM status_outbox WHERE "commit" = ? ORDER BY id')
      .all(commit) as Array<{ state: string; open: number }>;
  } finally {
    db.close();
  }
}

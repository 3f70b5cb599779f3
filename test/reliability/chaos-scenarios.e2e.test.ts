// The chaos run's (issue 18) world and invariants (reliability/chaos/) on exact sequences: first, that the invariant
// checks do fail when the device breaks one (a planted duplicate and orphan, a floor that moved back); then what the
// run found, pinned down: the real agent following a Git branch over smart HTTP, with the example stack and a
// composite, killed at a named crash point (KEYSTONE_CRASH_AT) or while idle instead of at a random moment.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChaosAgent } from '../../reliability/chaos/chaos-agent.js';
import { ChaosRepo } from '../../reliability/chaos/chaos-repo.js';
import { checkSettled, checkStore, waitSettled } from '../../reliability/chaos/check-invariants.js';
import { until } from '../support/composite-fixture.js';

let world: { repo: ChaosRepo; ca: ChaosAgent; root: string } | undefined;
afterEach(async () => {
  await world?.ca.close();
  await world?.repo.close();
  if (world) rmSync(world.root, { recursive: true, force: true });
  world = undefined;
});

/** The chaos world without the container, settled on its first commit. */
async function settledWorld(): Promise<{ repo: ChaosRepo; ca: ChaosAgent }> {
  const root = mkdtempSync(join(tmpdir(), 'keystone-chaos-scenario-'));
  const repo = await ChaosRepo.create(root, {});
  const ca = new ChaosAgent(repo, false);
  world = { repo, ca, root };
  await ca.init();
  ca.start();
  expect(await waitSettled(repo, ca, 60_000)).toBeUndefined();
  return { repo, ca };
}

async function expectAllHeld(repo: ChaosRepo, ca: ChaosAgent): Promise<void> {
  const why = await waitSettled(repo, ca, 60_000);
  expect(why, `not settled:\n${ca.agent?.tail(40)}`).toBeUndefined();
  const results = await checkSettled(repo, ca, repo.pushed, { max: 0 });
  expect(results.filter((r) => !r.ok)).toEqual([]);
}

describe('the chaos invariants', { timeout: 150_000 }, () => {
  it('fail on a second instance of a component and on a process no record accounts for', async () => {
    const { repo, ca } = await settledWorld();
    // What a broken adoption would leave: another `sleep 100000` in app/side's work directory, in a session of its own.
    const extra = spawn('sleep', ['100000'], { cwd: ca.h.workDir('app/side'), detached: true, stdio: 'ignore' });
    try {
      await until(() => ca.h.processesOf('app/side').some((p) => p.pid === extra.pid), 5_000, 'the planted process');
      const failed = (await checkSettled(repo, ca, [], { max: 0 })).filter((r) => !r.ok);
      expect(failed.map((r) => r.name)).toEqual(['no duplicates', 'no orphans']);
      expect(failed[0]!.detail).toContain('app/side');
      expect(failed[1]!.detail).toContain(`process ${extra.pid} `);
    } finally {
      extra.kill('SIGKILL');
    }
  });

  it('fail when the floor is below one seen before', async () => {
    const { ca } = await settledWorld();
    const floor = { max: Number.MAX_SAFE_INTEGER };
    expect(checkStore(ca.h.stateDir, floor)).toMatchObject([{ name: 'store integrity', ok: true }, { name: 'replay floor', ok: false }]);
  });
});

describe('kill -9 sequences the chaos run found', { timeout: 150_000 }, () => {
  it('an apply cut short after its stops, then a refused commit as the tip: the device still ends on the newest accepted commit', async () => {
    const { repo, ca } = await settledWorld();
    await ca.kill9();
    // A bump of api stops web, then api; the agent dies right after the first stop.
    const bump = await repo.pushBump('api');
    const doomed = ca.start({ KEYSTONE_CRASH_AT: 'after-stop' });
    expect((await doomed.waitForExit(60_000)).signal).toBe('SIGKILL');
    expect(ca.h.appliedRevision()?.id).toBe(bump.id);
    // The first stop (web, a dependent of api) was recorded, and then the agent died.
    expect(ca.h.components().filter((c) => c.state !== 'running').map((c) => c.name)).toEqual(['web']);
    await ca.kill9();
    // While it is down, a commit that must be refused becomes the tip (an old signature, replayed).
    const replay = await repo.pushReplay();
    ca.start();
    await ca.agent!.waitForLog((l) => l.revision === replay.id && l.msg === 'revision refused; still running the previous one', 60_000, 0, 'the refusal');
    await expectAllHeld(repo, ca);
  });

  it('a component that dies while the agent is down, then a refused commit as the tip: it is started again (seed 42, kill 22)', async () => {
    const { repo, ca } = await settledWorld();
    // A second accepted commit first: the first one's signature is the floor, and only an older one is a replay.
    await repo.pushBump('telemetry');
    await ca.nudge();
    expect(await waitSettled(repo, ca, 60_000)).toBeUndefined();
    await ca.kill9();
    const web = ca.h.component('web')!.instance;
    if (web?.kind !== 'process') throw new Error('web has no process');
    process.kill(web.pid, 'SIGKILL');
    const replay = await repo.pushReplay();
    ca.start();
    await ca.agent!.waitForLog((l) => l.revision === replay.id && l.msg === 'revision refused; still running the previous one', 60_000, 0, 'the refusal');
    await expectAllHeld(repo, ca);
    expect(ca.h.component('web')?.instance).not.toEqual(web);
  });

  it('a commit pushed while the agent is down and never taken up, then a refused tip: it runs on what it applied last (seed 20261203, kill 489)', async () => {
    const { repo, ca } = await settledWorld();
    // A second accepted commit first: the first one's signature is the floor, and only an older one is a replay.
    const ran = await repo.pushBump('telemetry');
    await ca.nudge();
    expect(await waitSettled(repo, ca, 60_000)).toBeUndefined();
    await ca.kill9();
    // Both pushed while it is down: a good commit the device never sees as the tip, then a replay on top of it.
    const skipped = await repo.pushBump('api');
    const replay = await repo.pushReplay();
    ca.start();
    await ca.agent!.waitForLog((l) => l.revision === replay.id && l.msg === 'revision refused; still running the previous one', 60_000, 0, 'the refusal');
    // A device follows the tip alone: the refused tip leaves it on the commit it applied last, never on one it did not see.
    await expectAllHeld(repo, ca);
    expect(ca.h.appliedRevision()?.id).toBe(ran.id);
    expect(repo.newestAccepted().id).toBe(skipped.id);
    expect(ca.h.component('api')?.version).toBe(ran.model!.versions.api);
  });
});

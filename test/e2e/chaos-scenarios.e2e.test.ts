// The chaos run's (issue 18) world and invariants (reliability/chaos/) on exact sequences: first, that the invariant
// checks do fail when the device breaks one (a planted duplicate and orphan, a floor that moved back, a success
// recorded for a revision that failed); then what the run found, pinned down: the real agent following a Git branch
// over smart HTTP, with the example stack and a composite, killed at a named crash point (KEYSTONE_CRASH_AT) or while
// idle instead of at a random moment; and issue 27's sequences: a revision that failed (gauge never healthy) across
// agent restarts, and kills inside the health check of the instances a restarted agent adopted.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { STATE_DB_FILE } from '../../src/store/state-store.js';
import { ADOPTED_CHECKED, ADOPTED_CHECKING, ChaosAgent } from '../../reliability/chaos/chaos-agent.js';
import { ChaosRepo, GAUGE, type PushedCommit } from '../../reliability/chaos/chaos-repo.js';
import {
  checkSettled,
  checkStore,
  OutcomeLedger,
  waitSettled,
  type InvariantResult,
} from '../../reliability/chaos/check-invariants.js';
import {
  checkOutcomes,
  FAILURE_STAYS_FAILURE,
  SUCCESS_ONLY_WHEN_HEALTHY,
} from '../../reliability/chaos/outcome-invariants.js';
import { outboxRows } from '../../reliability/chaos/store-probe.js';
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

async function expectAllHeld(repo: ChaosRepo, ca: ChaosAgent, ledger = new OutcomeLedger()): Promise<void> {
  const why = await waitSettled(repo, ca, 60_000);
  expect(why, `not settled:\n${ca.agent?.tail(40)}`).toBeUndefined();
  const results = await checkSettled(repo, ca, repo.pushed, { max: 0 }, ledger);
  expect(results.filter((r) => !r.ok)).toEqual([]);
}

const failedOnes = (results: readonly InvariantResult[]) => results.filter((r) => !r.ok);

/** The settled world, then a sick commit (gauge never healthy): applied, failed, settled on it; its ledger as the run keeps it. */
async function failedWorld(): Promise<{ repo: ChaosRepo; ca: ChaosAgent; sick: PushedCommit; ledger: OutcomeLedger }> {
  const { repo, ca } = await settledWorld();
  const sick = await repo.pushSick();
  await ca.nudge();
  const ledger = new OutcomeLedger();
  await expectAllHeld(repo, ca, ledger);
  expect(ca.h.history().find((e) => e.revision === sick.id)).toMatchObject({
    outcome: 'failure',
    failed: [{ name: GAUGE }],
  });
  expect(ca.h.component(GAUGE)?.state).toBe('unhealthy');
  expect(ledger.failed.has(sick.id)).toBe(true);
  return { repo, ca, sick, ledger };
}

/** What the agent before issue 27 did after a restart on a failed revision: a new apply row that says success, and its status (delivered). */
function plantSuccessAfterRestart(stateDir: string, revision: string): void {
  const db = new Sqlite(join(stateDir, STATE_DB_FILE), { timeout: 5_000 });
  try {
    const now = Date.now();
    db.prepare(
      `INSERT INTO applies (revision, plan_file, started_at, reconcile, finished_at, outcome, summary, failed)
                SELECT revision, plan_file, ?, reconcile, ?, 'success', '0 started, 0 stopped, 9 untouched', '[]' FROM applies WHERE revision = ? AND outcome = 'failure'`,
    ).run(now - 50, now, revision);
    db.prepare(
      `INSERT INTO status_outbox (reporter, "commit", state, description, context, created_at, attempts, next_attempt_at, delivered_at)
                SELECT reporter, "commit", 'success', 'applied: 9 components running', context, ?, 1, NULL, ? FROM status_outbox WHERE "commit" = ? AND state = 'failure'`,
    ).run(now + 1, now + 2, revision);
  } finally {
    db.close();
  }
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
    expect(checkStore(ca.h.stateDir, floor)).toMatchObject([
      { name: 'store integrity', ok: true },
      { name: 'replay floor', ok: false },
    ]);
  });

  it('fail on a success recorded and reported for a revision that failed, while its component is still unhealthy (issue 27)', async () => {
    const { repo, ca, sick, ledger } = await failedWorld();
    await ca.kill9();
    plantSuccessAfterRestart(ca.h.stateDir, sick.id);
    const failed = failedOnes(await checkOutcomes(repo, ca, ledger));
    expect(failed.map((r) => r.name)).toEqual([SUCCESS_ONLY_WHEN_HEALTHY, FAILURE_STAYS_FAILURE]);
    // Both the history row and the status, each against gauge's state and against the failure before it.
    expect(failed[0]!.detail).toMatch(
      new RegExp(
        `${sick.id.slice(0, 12)}: history row \\d+ says success .* while gauge unhealthy since .*; ${sick.id.slice(0, 12)}: status \\d+ in the outbox \\(delivered\\) says success .* while gauge unhealthy`,
      ),
    );
    expect(failed[1]!.detail).toMatch(
      new RegExp(
        `${sick.id.slice(0, 12)}: history row \\d+ says success .*, after its failure in history row \\d+ .*; ${sick.id.slice(0, 12)}: status \\d+ in the outbox \\(delivered\\) says success .*, after its failure`,
      ),
    );
    // Each row and status is looked at once; what a later look still says is that the device settled on that success.
    const again = failedOnes(await checkOutcomes(repo, ca, ledger));
    expect(again.map((r) => r.name)).toEqual([SUCCESS_ONLY_WHEN_HEALTHY]);
    expect(again[0]!.detail).toMatch(
      /: the device settled on its success \(history row \d+, .*\) with gauge unhealthy since/,
    );
  });
});

describe('a revision that failed, across agent restarts (issue 27, SPEC §5)', { timeout: 180_000 }, () => {
  it('kill -9, then SIGTERM: each restart checks the adopted gauge, finds it unhealthy, and the revision stays failed with nothing new written or reported', async () => {
    const { repo, ca, sick, ledger } = await failedWorld();
    const rows = ca.h.history().length;
    const statuses = outboxRows(ca.h.stateDir, new Set([sick.id])).length;
    for (const how of ['kill -9', 'SIGTERM'] as const) {
      if (how === 'kill -9') await ca.kill9();
      else expect((await ca.agent!.stop()).code, how).toBe(0);
      const agent = ca.start();
      await expectAllHeld(repo, ca, ledger);
      // It said what it checked, and what it found.
      expect(
        agent.lines((l) => l.msg === ADOPTED_CHECKING).map((l) => [...(l.components as string[])].sort()),
        how,
      ).toEqual([repo.componentNames()]);
      expect(
        agent.lines((l) => l.msg === ADOPTED_CHECKED).map((l) => l.unhealthy),
        how,
      ).toEqual([[GAUGE]]);
      expect(ca.h.component(GAUGE), how).toMatchObject({
        state: 'unhealthy',
        reason: expect.stringContaining('after the agent restarted'),
      });
      expect(ca.h.history(), how).toHaveLength(rows);
      expect(outboxRows(ca.h.stateDir, new Set([sick.id])), how).toHaveLength(statuses);
    }
  });

  it('a kill -9 inside the health check of the adopted instances, at the crash point and as the chaos aims it: the revision stays failed', async () => {
    const { repo, ca, sick, ledger } = await failedWorld();
    const rows = ca.h.history().length;
    await ca.kill9();
    // As the chaos run aims it: watch the restarted agent's log, kill -9 at the line that says the check begins.
    ca.start();
    expect(await ca.adoptedCheckBegun(60_000), 'the restarted agent checks the instances it adopted').toBe(true);
    await ca.kill9();
    expect(ca.lastKillInAdoptedWait, ca.lastTail).toBe(true);
    expect(ca.lastTail).toContain(ADOPTED_CHECKING);
    // At the crash point (src/agent/crash-point.ts): the agent kills itself inside that check.
    const doomed = ca.start({ KEYSTONE_CRASH_AT: 'adopted-health-wait' });
    expect((await doomed.waitForExit(30_000)).signal).toBe('SIGKILL');
    await ca.kill9();
    expect(ca.lastKillInAdoptedWait, ca.lastTail).toBe(true);
    ca.start();
    await expectAllHeld(repo, ca, ledger);
    expect(
      ca.h
        .history()
        .filter((e) => e.revision === sick.id)
        .map((e) => e.outcome),
    ).toEqual(['failure']);
    expect(ca.h.history()).toHaveLength(rows);
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
    expect(
      ca.h
        .components()
        .filter((c) => c.state !== 'running')
        .map((c) => c.name),
    ).toEqual(['web']);
    await ca.kill9();
    // While it is down, a commit that must be refused becomes the tip (an old signature, replayed).
    const replay = await repo.pushReplay();
    ca.start();
    await ca.agent!.waitForLog(
      (l) => l.revision === replay.id && l.msg === 'revision refused; still running the previous one',
      60_000,
      0,
      'the refusal',
    );
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
    await ca.agent!.waitForLog(
      (l) => l.revision === replay.id && l.msg === 'revision refused; still running the previous one',
      60_000,
      0,
      'the refusal',
    );
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
    await ca.agent!.waitForLog(
      (l) => l.revision === replay.id && l.msg === 'revision refused; still running the previous one',
      60_000,
      0,
      'the refusal',
    );
    // A device follows the tip alone: the refused tip leaves it on the commit it applied last, never on one it did not see.
    await expectAllHeld(repo, ca);
    expect(ca.h.appliedRevision()?.id).toBe(ran.id);
    expect(repo.newestAccepted().id).toBe(skipped.id);
    expect(ca.h.component('api')?.version).toBe(ran.model!.versions.api);
  });
});

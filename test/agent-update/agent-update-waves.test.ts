// An agent update staged by [rollout] waves (SPEC §17: "staged by [rollout] waves like any commit"), on a device of
// the second wave, in-process as test/agent/rollout-holds.test.ts tests held commits: the real gate code (RolloutGate,
// the holds, take-revision's step 4) over a fake list of the fleet's rollout refs. The commit naming a new agent
// version is held without anything staged until the canary's success opens the gate; the device then switches; the new
// agent takes the commit up at its start without gating it again (its trial deadline runs), even if the gate would
// now hold it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentHome, readTrial } from '../../src/agent-update/agent-home.js';
import { currentVersionDir } from '../../src/agent-update/agent-versions.js';
import { instancesOf } from '../../src/agent-update/agent-update-setup.js';
import type { Agent } from '../../src/agent/agent.js';
import { RolloutGate } from '../../src/agent/rollout-gate.js';
import type { Revision } from '../../src/source/directory-source.js';
import type { RolloutState } from '../../src/core/rollout-gate.js';
import { rolloutRef } from '../../src/report/rollout-refs.js';
import { needs } from '../support/requirements.js';
import { fakeDeb } from './fake-deb.js';
import { LoopHarness } from './loop-harness.js';
import { signer, type Signer } from './signing.js';

const r = needs('dpkg-deb');
const h = new LoopHarness();
const keys: Signer[] = [];
afterEach(async () => {
  await h.cleanup();
  for (const k of keys.splice(0)) k.cleanup();
});

const ROLLOUT = `\n[rollout]\nwaves = [\n  { name = "canary", devices = ["k1"] },\n  { name = "rest", percent = 100 },\n]\nbake = "0s"\nmin_success = 1\n`;
const C1 = '1'.repeat(40);
const C2 = '2'.repeat(40);
const F = 'f'.repeat(40);

describe.skipIf(r.skip)(r.title('an agent update staged by rollout waves'), () => {
  it('a second-wave device holds the [agent] commit, staging nothing, until the canary succeeds; then switches, and the new agent applies it without the gate', async () => {
    const work = h.temp('ks-waves-');
    const stateDir = h.temp('ks-waves-state-');
    const home = agentHome(join(work, 'home'));
    const key = await signer();
    keys.push(key);
    const calls: string[][] = [];
    // The canary k1's report for C2, as the gate lists the fleet's rollout refs.
    let canary: RolloutState = 'applying';
    const gated = () => ({
      following: 'git' as const,
      gateRecheckMs: 3_600_000,
      rolloutGate: (store: Agent['store']) =>
        new RolloutGate({
          refs: {
            list: async () => ({
              refs: [{ ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C2, state: canary }), oid: F }],
              serverTime: Date.now(),
            }),
          },
          store,
          now: Date.now,
          random: () => 0.5,
        }),
    });
    const first = await h.start({
      version: '0.1.0',
      stateDir,
      home,
      trust: key.trust,
      calls,
      device: 'd2',
      extra: gated(),
    });
    let a = first.a;

    // C1, without [rollout]: applied at once; svc runs.
    const r1 = h.repo();
    await key.sign(r1.root);
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: r1 });
    await a.idle();
    expect(a.store.appliedRevision()?.id).toBe(C1);
    const pid = instancesOf(a.store).svc!;
    expect(pid).toMatch(/^\d+$/);

    // C2 names agent 0.2.0 and adds aux, staged by waves: held in `rest` behind the canary. Nothing fetched, unpacked
    // or switched. (aux: a plan this device never ran; the test below has a commit changing [agent] only.)
    const v2 = fakeDeb(work, { version: '0.2.0' });
    const r2 = h.repo({ agent: { version: '0.2.0', ...v2 }, aux: true, fleetTail: ROLLOUT });
    await key.sign(r2.root);
    const held: Array<{ revision: string; halted: boolean }> = [];
    a.events.on('held', (e) => held.push(e));
    a.offer({ id: C2, origin: 'commit', source: 'git', reader: r2 });
    await a.idle();
    expect(
      a.rolloutHolds().map((x) => x.revision),
      JSON.stringify({ calls, log: first.lines.map((l) => l.msg).slice(-8) }),
    ).toEqual([C2]);
    expect(held.map((e) => [e.revision, e.halted])).toEqual([[C2, false]]);
    expect(first.sent.filter((s) => s.commit === C2).map((s) => s.state)).toEqual(['pending']);
    expect(existsSync(home.versions)).toBe(false);
    expect(readTrial(home)).toBeUndefined();
    expect(existsSync(home.current)).toBe(false);
    expect(calls).toEqual([]);
    expect(a.store.appliedRevision()?.id).toBe(C1);
    // Read again, still closed: still nothing.
    a.sync();
    await a.idle();
    expect(calls).toEqual([]);
    expect(existsSync(home.versions)).toBe(false);

    // The canary succeeds: the gate opens for `rest`, and the device switches to 0.2.0 (nothing applied by 0.1.0).
    canary = 'success';
    a.sync();
    const deadline = Date.now() + 20_000;
    while (!calls.length && Date.now() < deadline)
      await a.idle().then(() => new Promise<void>((done) => setImmediate(done)));
    expect(calls).toEqual([['systemctl', 'restart', '--no-block', 'keystone.service']]);
    expect(readTrial(home)).toMatchObject({
      version: '0.2.0',
      previousVersion: '0.1.0',
      commit: C2,
      pids: { svc: pid },
    });
    expect(currentVersionDir(home)).toBe('0.2.0');
    expect(a.store.appliedRevision()?.id).toBe(C1);
    expect(a.store.history({ limit: 10 }).map((x) => x.revision)).toEqual([C1]);

    // The unit's restart: 0.2.0 starts on probation. The canary's report now says failure, so the gate would halt
    // C2 for any device that has not taken it up; this one was switched for it: not gated again.
    await h.stop(a);
    canary = 'failure';
    const second = await h.start({
      version: '0.2.0',
      stateDir,
      home,
      trust: key.trust,
      calls,
      device: 'd2',
      extra: gated(),
    });
    a = second.a;
    expect(second.updater.view()).toMatchObject({ state: 'trial', version: '0.2.0', commit: C2 });
    calls.length = 0;
    const held2: Array<{ revision: string; halted: boolean }> = [];
    a.events.on('held', (e) => held2.push(e));
    // As agent-git does at its start: what was held, from the local clone; then the Git source's tip, C2.
    const readers = new Map<string, Revision>([
      [C1, { id: C1, origin: 'commit', source: 'git', reader: r1 }],
      [C2, { id: C2, origin: 'commit', source: 'git', reader: r2 }],
    ]);
    await a.restoreHolds(async (commit) => readers.get(commit));
    a.offer({ id: C2, origin: 'commit', source: 'git', reader: r2 });
    await a.idle();
    expect(held2).toEqual([]);
    expect(a.rolloutHolds()).toEqual([]);
    expect(
      a.store.history({ limit: 10 }).map((x) => [x.revision, x.outcome]),
      JSON.stringify(second.lines.map((l) => `${String(l.msg)} ${String(l.reason ?? '')}`).slice(-10)),
    ).toEqual([
      [C2, 'success'],
      [C1, 'success'],
    ]);
    expect(a.store.appliedRevision()?.id).toBe(C2);
    expect(second.sent.filter((s) => s.commit === C2).at(-1)).toMatchObject({
      state: 'success',
      rollout: { wave: 'rest', state: 'success' },
    });
    // Proven: the trial is committed, the deadline timer stopped; svc adopted as it ran, aux started by C2's plan.
    expect(readTrial(home)).toBeUndefined();
    expect(calls).toEqual([['systemctl', 'stop', 'keystone-agent-deadline.timer']]);
    expect(instancesOf(a.store).svc).toBe(pid);
    expect(instancesOf(a.store).aux).toMatch(/^\d+$/);
  });

  // Found writing this test: a commit that changed only [agent] had the state digest of a plan the device ran well
  // before, so the gate's known-good shortcut (a revert reads nothing) opened it on every wave at once. The digest now
  // holds the [agent] version (src/agent/rollout-gate.ts stateDigest).
  it('a commit that changes only [agent] is held on a second-wave device too (not taken for a known-good revert)', async () => {
    const work = h.temp('ks-waves-');
    const stateDir = h.temp('ks-waves-state-');
    const home = agentHome(join(work, 'home'));
    const key = await signer();
    keys.push(key);
    const calls: string[][] = [];
    const { a } = await h.start({
      version: '0.1.0',
      stateDir,
      home,
      trust: key.trust,
      calls,
      device: 'd2',
      extra: {
        following: 'git',
        gateRecheckMs: 3_600_000,
        rolloutGate: (store) =>
          new RolloutGate({
            refs: {
              list: async () => ({
                refs: [{ ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C2, state: 'applying' }), oid: F }],
                serverTime: Date.now(),
              }),
            },
            store,
            now: Date.now,
            random: () => 0.5,
          }),
      },
    });
    const r1 = h.repo();
    await key.sign(r1.root);
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: r1 });
    await a.idle();
    const v2 = fakeDeb(work, { version: '0.2.0' });
    const r2 = h.repo({ agent: { version: '0.2.0', ...v2 }, fleetTail: ROLLOUT });
    await key.sign(r2.root);
    a.offer({ id: C2, origin: 'commit', source: 'git', reader: r2 });
    await a.idle();
    expect(calls).toEqual([]);
    expect(a.rolloutHolds().map((x) => x.revision)).toEqual([C2]);
  });
});

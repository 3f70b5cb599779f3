// The agent's held commits (SPEC §14), in-process with a fake ref source (the real one: rollout.e2e.test.ts): a commit
// held at the gate is never applied over a newer commit the device runs, nor during a forced manual apply's
// suspension of the Git sync; the newest commit whose gate opens is applied, also after a restart; a refusal on the
// device is an `error` in the rollout. (Found by review; each failed before its fix.)
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { componentPaths, startAgent, type Agent, type DeviceProblem } from '../../src/agent/agent.js';
import { until } from '../support/composite-fixture.js';
import { holdLock, letGo } from '../support/lock-holder.js';
import { RolloutGate } from '../../src/agent/rollout-gate.js';
import { createLogger } from '../../src/log/logger.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { rolloutRef } from '../../src/report/rollout-refs.js';
import { commitReports } from '../../src/agent/commit-reporting.js';
import type { CommitStatus } from '../../src/report/commit-status.js';

const dirs: string[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close({ stopComponents: true });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = (p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
};

const ROLLOUT = `\n[rollout]\nwaves = [\n  { name = "canary", devices = ["k1", "k2"] },\n  { name = "rest", percent = 100 },\n]\nbake = "0s"\nmin_success = 1\n`;

/** A repository with one component `name` and a fleet.toml for every device, staged or not. */
function repo(name: string, staged: boolean): DirectoryReader {
  const dir = temp('ks-holds-repo-');
  mkdirSync(join(dir, 'recipes'));
  mkdirSync(join(dir, 'plans'));
  writeFileSync(
    join(dir, 'recipes', `${name}.toml`),
    `[metadata]\nname = "com.test.${name}"\nversion = "1.0.0"\n\n[lifecycle.run.exec]\ncommand = "sh"\nargs = ["-c", "sleep 100"]\n`,
  );
  writeFileSync(join(dir, 'plans', 'p.toml'), `[[components]]\nname = "${name}"\nrecipe = "recipes/${name}.toml"\n`);
  writeFileSync(
    join(dir, 'fleet.toml'),
    `[[targets]]\nname = "all"\nselector = {}\nplan = "plans/p.toml"\n${staged ? ROLLOUT : ''}`,
  );
  return new DirectoryReader(dir);
}

const C1 = '1'.repeat(40);
const C2 = '2'.repeat(40);

async function agent(
  over: {
    stateDir?: string;
    refs?: () => Array<{ ref: string; oid: string }>;
    device?: string;
    check?: () => DeviceProblem[];
  } = {},
) {
  let canary: 'applying' | 'success' = 'applying';
  const lines: Array<Record<string, unknown>> = [];
  const a = await startAgent({
    fleet: { device: over.device ?? 'dev', labels: {} },
    ...(over.check && { check: over.check }),
    following: 'git',
    stateDir: over.stateDir ?? temp('ks-holds-state-'),
    trust: { unsigned: true },
    log: createLogger({ pretty: false, write: (l) => lines.push(JSON.parse(l)) }),
    runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
    probe: async () => ({ ok: true, detail: 'no check', latencyMs: 0 }),
    concurrency: 2,
    graceMs: 2000,
    gateRecheckMs: 100,
    rolloutGate: (store) =>
      new RolloutGate({
        refs: {
          list: async () => ({
            refs: over.refs?.() ?? [
              { ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C1, state: canary }), oid: 'f'.repeat(40) },
            ],
            serverTime: Date.now(),
          }),
        },
        store,
        now: Date.now,
        random: () => 0.5,
      }),
  });
  agents.push(a);
  return { a, lines, canarySucceeds: () => void (canary = 'success') };
}

describe('held commits in the agent', () => {
  it('a newer commit applied without the gate (fleet.toml dropped [rollout]) is not undone by the older held commit once its gate opens', async () => {
    const { a, canarySucceeds } = await agent();
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    await a.idle();
    expect(a.rolloutHolds().map((h) => h.revision)).toEqual([C1]);
    a.offer({ id: C2, origin: 'commit', source: 'git', reader: repo('two', false) });
    await a.idle();
    expect(a.store.appliedRevision()?.id).toBe(C2);
    // SPEC §7/§14: a device never goes back to an older commit than the newest it took up: C1 is dropped.
    expect(a.rolloutHolds()).toEqual([]);
    canarySucceeds();
    a.sync();
    await a.idle();
    expect(a.store.appliedRevision()?.id).toBe(C2);
  });

  it('a forced manual apply suspends the Git sync: a held commit whose gate opens meanwhile is not applied over it', async () => {
    const { a, canarySucceeds } = await agent();
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    await a.idle();
    expect(a.rolloutHolds().map((h) => h.revision)).toEqual([C1]);
    a.applyManual(
      { id: 'manual:x', origin: 'manual', source: 'manual', reader: repo('manual', false), planFile: 'plans/p.toml' },
      { force: true },
    );
    await a.idle();
    expect(a.syncState().suspended).toBeDefined();
    expect(a.store.appliedRevision()?.id).toBe('manual:x');
    canarySucceeds();
    a.sync();
    await a.idle();
    expect(a.rolloutHolds()[0]?.reason).toContain('the Git sync is suspended');
    expect(a.syncState().suspended).toBeDefined();
    expect(a.store.appliedRevision()?.id).toBe('manual:x');
    // Resumed: the gate is read again and the held commit goes.
    a.resume();
    a.sync();
    await a.idle();
    expect(a.store.appliedRevision()?.id).toBe(C1);
  });

  it('an agent restarted while holding two commits keeps both: the older one still applies when the newer halts', async () => {
    const F = 'f'.repeat(40);
    let refs = [
      { ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C1, state: 'applying' }), oid: F },
      { ref: rolloutRef({ wave: 'canary', device: 'k2', commit: C2, state: 'applying' }), oid: F },
    ];
    const stateDir = temp('ks-holds-state-');
    const first = await agent({ stateDir, refs: () => refs });
    first.a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    first.a.offer({ id: C2, origin: 'commit', source: 'git', reader: repo('two', true) });
    await first.a.idle();
    expect(first.a.rolloutHolds().map((h) => h.revision)).toEqual([C2, C1]);
    await first.a.close();
    agents.splice(agents.indexOf(first.a), 1);
    // Restarted: the held commits are offered again from the local clone (agent-git does this with the Git source's
    // revisionAt before its first look), oldest first; then the Git source offers its tip, C2, once more.
    const second = await agent({ stateDir, refs: () => refs });
    const readers = new Map([
      [C1, repo('one', true)],
      [C2, repo('two', true)],
    ]);
    await second.a.restoreHolds(async (commit) =>
      readers.has(commit) ? { id: commit, origin: 'commit', source: 'git', reader: readers.get(commit)! } : undefined,
    );
    expect(second.a.rolloutHolds().map((h) => h.revision)).toEqual([C2, C1]);
    second.a.offer({ id: C2, origin: 'commit', source: 'git', reader: repo('two', true) });
    await second.a.idle();
    // The canary: C1 succeeded, C2 failed (halted, abort 0 %).
    refs = [
      { ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C1, state: 'success' }), oid: F },
      { ref: rolloutRef({ wave: 'canary', device: 'k2', commit: C2, state: 'failure' }), oid: F },
    ];
    second.a.sync();
    await second.a.idle();
    // SPEC §14: "a device always applies the newest commit whose gate is open for it": C1 (without the restart it does).
    expect(second.a.store.appliedRevision()?.id).toBe(C1);
  });

  it('the older held commit applies when the newer one halts', async () => {
    const F = 'f'.repeat(40);
    let refs = [
      { ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C1, state: 'applying' }), oid: F },
      { ref: rolloutRef({ wave: 'canary', device: 'k2', commit: C2, state: 'applying' }), oid: F },
    ];
    const { a } = await agent({ refs: () => refs });
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    a.offer({ id: C2, origin: 'commit', source: 'git', reader: repo('two', true) });
    await a.idle();
    refs = [
      { ref: rolloutRef({ wave: 'canary', device: 'k1', commit: C1, state: 'success' }), oid: F },
      { ref: rolloutRef({ wave: 'canary', device: 'k2', commit: C2, state: 'failure' }), oid: F },
    ];
    a.sync();
    await a.idle();
    expect(a.store.appliedRevision()?.id).toBe(C1);
  });

  it('a canary device that refuses the commit (a device check fails) writes an `error` rollout ref, so the halt counts it', async () => {
    const { a } = await agent({
      device: 'k1',
      check: () => [
        {
          component: 'one',
          file: 'recipes/one.toml',
          path: 'lifecycle.run',
          code: 'KS_DEVICE_CHECK',
          message: 'not possible on this device',
        },
      ],
    });
    const sent: CommitStatus[] = [];
    a.outcomes.reportTo(
      commitReports({
        outbox: { enqueue: (s) => (sent.push(s), [sent.length]) },
        context: 'keystone/k1',
        now: Date.now,
        rolloutKeep: () => a.rolloutKeep(),
      }),
    );
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    await a.idle();
    expect(sent.map((s) => s.state)).toEqual(['error']);
    // docs/rollouts.md: halts count `failure`, or `error`: refused on the device.
    expect(sent[0]!.rollout).toMatchObject({ wave: 'canary', state: 'error' });
  });

  it('the commit a device already runs, offered again (a restart), is not gated again: its own report stands', async () => {
    const F = 'f'.repeat(40);
    let refs: Array<{ ref: string; oid: string }> = [];
    const { a } = await agent({ device: 'k1', refs: () => refs });
    const held: Array<{ revision: string; halted: boolean }> = [];
    a.events.on('held', (e) => held.push(e));
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    await a.idle();
    expect(a.store.appliedRevision()?.id).toBe(C1);
    // Its canary peer failed C1: a device that has not applied it would find it halted; this one runs it already.
    refs = [rolloutRef({ wave: 'canary', device: 'k2', commit: C1, state: 'failure' })].map((ref) => ({ ref, oid: F }));
    a.offer({ id: C1, origin: 'commit', source: 'git', reader: repo('one', true) });
    await a.idle();
    expect(held).toEqual([]);
    expect(a.store.appliedRevision()?.id).toBe(C1);
  });

  it('a commit waiting for an update lock is behind a newer commit held at the gate: its wait ends, the newer one stays held', async () => {
    // one runs with an update lock; its lock is held; C1 (gate open) waits for it; C2 (gate closed) comes.
    const locked = (version: string, staged: boolean) => {
      const r = repo('one', staged);
      writeFileSync(
        join(r.root, 'recipes', 'one.toml'),
        `[metadata]\nname = "com.test.one"\nversion = "${version}"\n\n[lifecycle.update]\nlock = "run/update.lock"\n\n[lifecycle.run.exec]\ncommand = "sh"\nargs = ["-c", "mkdir -p run && : >> run/update.lock && exec sleep 100"]\n`,
      );
      return r;
    };
    const stateDir = temp('ks-holds-state-');
    const { a, lines, canarySucceeds } = await agent({ stateDir });
    a.offer({ id: 'dir:000000000000', origin: 'directory', source: 'dir', reader: locked('1.0.0', false) });
    await a.idle();
    const lockFile = join(componentPaths(stateDir, 'one').workDir, 'run', 'update.lock');
    await until(() => existsSync(lockFile), 10_000, 'one to make its lock file');
    const holder = await holdLock(lockFile);
    try {
      a.offer({ id: C1, origin: 'commit', source: 'git', reader: locked('1.1.0', true) });
      await a.idle();
      canarySucceeds();
      // The gate is read again on its timer (every 100 ms here): then C1 goes, and waits for the lock.
      await until(() => a.waiting() !== undefined, 10_000, 'C1 to wait for the lock');
      expect(
        a.waiting(),
        JSON.stringify({
          holds: a.rolloutHolds(),
          applied: a.store.appliedRevision()?.id,
          lines: lines.map((l) => l.msg).slice(-12),
        }),
      ).toMatchObject({ revision: C1, reason: 'held: one holds its update lock' });
      a.offer({ id: C2, origin: 'commit', source: 'git', reader: locked('1.2.0', true) });
      await a.idle();
      expect(a.rolloutHolds().map((h) => h.revision)).toEqual([C2]);
      // Retaken at the release, C1 would go back into the holds first and drop C2 when its gate opened.
      expect(a.waiting()).toBeUndefined();
    } finally {
      letGo(holder);
    }
  });
});

// An agent update through the agent's own loop (SPEC §17), in-process: real agents on one state directory, a real
// component adopted across them, real packages and the package's agent-rollback run by sh; only systemctl is
// recorded (the restart it would do is done here by closing one agent and starting the next on the same state).
// The fleet repositories are signed: an [agent] in an unsigned revision is refused (agent-update-refusals.test.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentHome, readFailed, readTrial, writeTrial } from '../../src/agent-update/agent-home.js';
import { AgentUpdater } from '../../src/agent-update/agent-updater.js';
import { instancesOf } from '../../src/agent-update/agent-update-setup.js';
import { componentPaths, startAgent, type Agent } from '../../src/agent/agent.js';
import { until } from '../support/composite-fixture.js';
import { holdLock, letGo } from '../support/lock-holder.js';
import { createLogger } from '../../src/log/logger.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { needs } from '../support/requirements.js';
import { ARCH, fakeDeb } from './fake-deb.js';
import { signer, type Signer } from './signing.js';

const r = needs('dpkg-deb');
const PROJECT = join(import.meta.dirname, '..', '..');

const dirs: string[] = [];
const agents: Agent[] = [];
const keys: Signer[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.close({ stopComponents: true });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  for (const k of keys.splice(0)) k.cleanup();
});

/** A throwaway release key this test's device trusts. */
async function releaseKey(): Promise<Signer> {
  const k = await signer();
  keys.push(k);
  return k;
}

/** `repo(agent)`, signed by `key`: one reader per commit, offered again as it is (a signature made again would be another). */
async function signedRepo(
  key: Signer,
  agent?: { version: string; uri: string; sha256: string },
): Promise<DirectoryReader> {
  const reader = repo(agent);
  await key.sign(reader.root);
  return reader;
}

function temp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A fleet repository: one component, and `[agent]` when given. */
function repo(agent?: { version: string; uri: string; sha256: string }): DirectoryReader {
  const dir = temp('ks-update-repo-');
  mkdirSync(join(dir, 'recipes'));
  mkdirSync(join(dir, 'plans'));
  writeFileSync(
    join(dir, 'recipes', 'svc.toml'),
    `[metadata]\nname = "com.test.svc"\nversion = "1.0.0"\n\n[lifecycle.run.exec]\ncommand = "sleep"\nargs = ["1000"]\n`,
  );
  writeFileSync(join(dir, 'plans', 'p.toml'), `[[components]]\nname = "svc"\nrecipe = "recipes/svc.toml"\n`);
  let fleet = `[[targets]]\nname = "all"\nselector = {}\nplan = "plans/p.toml"\n`;
  if (agent)
    fleet = `[agent]\nversion = "${agent.version}"\n[agent.packages.${ARCH}]\nuri = "${agent.uri}"\nsha256 = "${agent.sha256}"\n\n${fleet}`;
  writeFileSync(join(dir, 'fleet.toml'), fleet);
  return new DirectoryReader(dir);
}

/** The agent's updater as the package wires it, but for `exec` (systemctl recorded; agent-rollback run by sh or not). */
function updaterFor(o: {
  home: ReturnType<typeof agentHome>;
  version: string;
  stateDir: string;
  log: ReturnType<typeof createLogger>;
  agent: () => Agent;
  exec: ConstructorParameters<typeof AgentUpdater>[0]['exec'];
}): AgentUpdater {
  return new AgentUpdater({
    home: o.home,
    version: o.version,
    arch: ARCH,
    unit: 'keystone.service',
    packageLib: join(PROJECT, 'packaging', 'launchers'),
    node: process.execPath,
    cacheDir: join(o.stateDir, 'cache'),
    instances: () => instancesOf(o.agent().store),
    snapshot: (f) => o.agent().store.snapshotTo(f),
    log: o.log,
    now: Date.now,
    exec: o.exec,
  });
}

/** Commit ids: a commit that failed on a device stands (a directory's revision would be tried again). */
const [R1, R2, R3, R4] = ['1', '2', '3', '4'].map((d) => d.repeat(40)) as [string, string, string, string];

describe.skipIf(r.skip)(r.title('an agent update through the agent loop'), () => {
  it('switches without touching a component, proves the new agent by its success, and a version put back fails its commits without being tried again', async () => {
    const work = temp('ks-update-');
    const stateDir = temp('ks-update-state-');
    const home = agentHome(join(work, 'home'));
    const key = await releaseKey();
    const calls: string[][] = [];
    let current: Agent | undefined;
    const start = async (version: string) => {
      const log = createLogger({ pretty: false, write: () => undefined });
      const exec: Parameters<typeof updaterFor>[0]['exec'] = async (file, args, env) => {
        calls.push([file, ...args]);
        if (file === '/bin/sh') execFileSync(file, args, { env: { ...env, PATH: process.env.PATH } });
      };
      const updater = updaterFor({ home, version, stateDir, log, agent: () => current!, exec });
      const a = await startAgent({
        fleet: { device: 'd1', labels: {} },
        stateDir,
        trust: key.trust,
        log,
        runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
        probe: async () => ({ ok: true, detail: 'no check', latencyMs: 0 }),
        concurrency: 2,
        graceMs: 2000,
        agentUpdate: updater,
      });
      current = a;
      agents.push(a);
      return { a, updater };
    };
    const offer = async (a: Agent, id: string, reader: DirectoryReader) => {
      a.offer({ id, origin: 'commit', source: 'test', reader });
      await a.idle();
    };
    const restart = async (a: Agent, version: string) => {
      await a.close({ stopComponents: false });
      agents.splice(agents.indexOf(a), 1);
      return start(version);
    };

    // 0.1.0 runs the stack.
    let { a } = await start('0.1.0');
    const r1 = await signedRepo(key);
    await offer(a, R1, r1);
    const pid = instancesOf(a.store).svc;
    expect(pid).toMatch(/^\d+$/);

    // r2 names 0.2.0: staged, switched to, the unit restarted; nothing applied by 0.1.0, nothing reported yet.
    const v2 = fakeDeb(work, { version: '0.2.0' });
    const r2 = await signedRepo(key, { version: '0.2.0', ...v2 });
    await offer(a, R2, r2);
    expect(calls).toEqual([['systemctl', 'restart', '--no-block', 'keystone.service']]);
    expect(a.store.history({ limit: 10 }).map((h) => h.revision)).toEqual([R1]);
    const trial = readTrial(home)!;
    expect(trial).toMatchObject({ version: '0.2.0', previousVersion: '0.1.0', commit: R2, pids: { svc: pid } });
    expect(existsSync(home.stateBefore)).toBe(true);

    // 0.2.0 starts on probation, adopts svc as it runs, applies r2: success, the trial is committed.
    const second = await restart(a, '0.2.0');
    a = second.a;
    expect(second.updater.view()).toMatchObject({ state: 'trial', version: '0.2.0', commit: R2 });
    calls.length = 0;
    // What ran before the switch, resumed first at the start (as restoreHolds does): its old success proves nothing.
    await offer(a, R1, r1);
    expect(readTrial(home)?.commit).toBe(R2);
    expect(calls).toEqual([]);
    // A commit naming yet another version waits for the probation; the status says which and for which commit
    // (agent.update.next) until another revision is taken up.
    const R5 = '5'.repeat(40);
    await offer(a, R5, await signedRepo(key, { version: '0.3.0', ...v2 }));
    expect(second.updater.view()).toMatchObject({ state: 'trial', version: '0.2.0', next: '0.3.0', nextCommit: R5 });
    expect(readTrial(home)?.version).toBe('0.2.0');
    expect(calls).toEqual([]);
    await offer(a, R1, r1);
    expect(second.updater.view()).toMatchObject({ state: 'trial', version: '0.2.0' });
    expect(second.updater.view()).not.toHaveProperty('next');
    await offer(a, R2, r2);
    expect(a.store.history({ limit: 1 })[0]).toMatchObject({ revision: R2, outcome: 'success' });
    expect(instancesOf(a.store).svc).toBe(pid);
    expect(readTrial(home)).toBeUndefined();
    expect(calls).toEqual([['systemctl', 'stop', 'keystone-agent-deadline.timer']]);

    // A power loss right after the success was written, before the trial went: the next start resumes R2, whose
    // success stands, and that settles the probation (no deadline puts the proven agent back).
    writeTrial(home, trial);
    ({ a } = await restart(a, '0.2.0'));
    calls.length = 0;
    await offer(a, R2, r2);
    expect(readTrial(home)).toBeUndefined();
    expect(calls).toEqual([['systemctl', 'stop', 'keystone-agent-deadline.timer']]);
    expect(
      a.store
        .history({ limit: 10 })
        .filter((h) => h.revision === R2)
        .map((h) => h.outcome),
    ).toEqual(['success']);

    // r3 names 0.3.0; the new agent does not find svc as it ran (it died during the switch): put back, failure.
    const v3 = fakeDeb(work, { version: '0.3.0' });
    const r3 = await signedRepo(key, { version: '0.3.0', ...v3 });
    await offer(a, R3, r3);
    expect(readTrial(home)).toMatchObject({ version: '0.3.0', commit: R3 });
    await a.close({ stopComponents: true });
    agents.splice(agents.indexOf(a), 1);
    ({ a } = await start('0.3.0'));
    calls.length = 0;
    await offer(a, R3, r3);
    const failed = a.store.history({ limit: 1 })[0]!;
    expect(failed).toMatchObject({ revision: R3, outcome: 'failure' });
    expect(failed.summary).toMatch(
      /^KS_AGENT_UPDATE_FAILED: agent 0.3.0 did not adopt svc as they ran before the switch/,
    );
    expect(calls[0]?.slice(0, 3)).toEqual([
      '/bin/sh',
      join(PROJECT, 'packaging', 'launchers', 'agent-rollback'),
      '--restart',
    ]);
    expect(readFailed(home)).toMatchObject({ version: '0.3.0', commit: R3 });
    expect(readTrial(home)).toBeUndefined();

    // 0.2.0 again: r3 stays a failure; r4, naming the same package, fails at once, and nothing is switched.
    ({ a } = await restart(a, '0.2.0'));
    calls.length = 0;
    await offer(a, R3, r3);
    await offer(a, R4, await signedRepo(key, { version: '0.3.0', ...v3 }));
    const rows = a.store.history({ limit: 10 }).map((h) => ({ revision: h.revision, outcome: h.outcome }));
    expect(rows.filter((h) => h.revision === R3)).toEqual([{ revision: R3, outcome: 'failure' }]);
    expect(a.store.history({ limit: 1 })[0]).toMatchObject({
      revision: R4,
      outcome: 'failure',
      summary: expect.stringMatching(/^KS_AGENT_UPDATE_FAILED: agent 0.3.0 was put back on this device: /),
    });
    expect(calls).toEqual([]);
    expect(readTrial(home)).toBeUndefined();
  });

  it('does not switch while a component of the revision holds its update lock (SPEC §19): the trial would run out on it', async () => {
    const work = temp('ks-update-');
    const stateDir = temp('ks-update-state-');
    const home = agentHome(join(work, 'home'));
    const key = await releaseKey();
    const calls: string[][] = [];
    const log = createLogger({ pretty: false, write: () => undefined });
    const started: { agent?: Agent } = {};
    const updater = updaterFor({
      home,
      version: '0.1.0',
      stateDir,
      log,
      agent: () => started.agent!,
      exec: async (file, args) => void calls.push([file, ...args]),
    });
    const a = await startAgent({
      fleet: { device: 'd1', labels: {} },
      stateDir,
      trust: key.trust,
      log,
      runtimes: { process: new ProcessRuntime({ installArtifacts: async () => undefined }) },
      probe: async () => ({ ok: true, detail: 'no check', latencyMs: 0 }),
      concurrency: 2,
      graceMs: 2000,
      agentUpdate: updater,
    });
    started.agent = a;
    agents.push(a);
    // svc with an update lock; r2 changes svc and names agent 0.2.0.
    const locked = async (version: string, agent?: { version: string; uri: string; sha256: string }) => {
      const reader = repo(agent);
      writeFileSync(
        join(reader.root, 'recipes', 'svc.toml'),
        `[metadata]\nname = "com.test.svc"\nversion = "${version}"\n\n[lifecycle.update]\nlock = "run/update.lock"\n\n[lifecycle.run.exec]\ncommand = "sh"\nargs = ["-c", "mkdir -p run && : >> run/update.lock && exec sleep 1000"]\n`,
      );
      await key.sign(reader.root);
      return reader;
    };
    a.offer({ id: R1, origin: 'commit', source: 'test', reader: await locked('1.0.0') });
    await a.idle();
    const lockFile = join(componentPaths(stateDir, 'svc').workDir, 'run', 'update.lock');
    await until(() => existsSync(lockFile), 10_000, 'svc to make its lock file');
    const holder = await holdLock(lockFile);
    try {
      const v2 = fakeDeb(work, { version: '0.2.0' });
      a.offer({ id: R2, origin: 'commit', source: 'test', reader: await locked('1.1.0', { version: '0.2.0', ...v2 }) });
      await a.idle();
      expect(a.waiting()).toMatchObject({ revision: R2, reason: 'held: svc holds its update lock' });
      expect(calls).toEqual([]);
      expect(readTrial(home)).toBeUndefined();
    } finally {
      letGo(holder);
    }
    // Let go: taken up again, and now switched to (the unit restarted into 0.2.0).
    await until(() => calls.length > 0, 10_000, 'the switch once the lock is let go');
    expect(calls).toEqual([['systemctl', 'restart', '--no-block', 'keystone.service']]);
    expect(readTrial(home)).toMatchObject({ version: '0.2.0', commit: R2 });
  });
});

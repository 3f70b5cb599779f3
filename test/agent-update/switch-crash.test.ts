// SPEC §17: "a device never ends up without a working agent" — a kill -9 (a power loss) at every step of a switch,
// of a new agent's proof, and of agent-rollback; then the device boots again and again, as systemd would restart the
// unit: each boot must start a working agent (the real launcher picks it), and the device must settle on the new
// version when it works, on the previous one when it does not, with no trial left over.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentHome, readFailed, readTrial } from '../../src/agent-update/agent-home.js';
import { currentVersionDir } from '../../src/agent-update/agent-versions.js';
import { SWITCH_CRASH_POINTS } from '../../src/agent-update/switch-crash-point.js';
import { needs } from '../support/requirements.js';
import { fakeDeb } from './fake-deb.js';

const r = needs('dpkg-deb');
const PROJECT = join(import.meta.dirname, '..', '..');
const RUNNER = join(import.meta.dirname, 'fixtures', 'update-runner.mjs');
/** A program that says which version it is: the bundle of a package. */
const bundle = (version: string) =>
  `if (process.argv.includes('--version')) console.log('keystone ${version}'); else console.log('keystone ${version} ' + process.argv.slice(2).join(' '));\n`;

describe.skipIf(r.skip)(r.title('power loss at every step of an agent update'), () => {
  let dir: string;
  let lib: string;
  let home: ReturnType<typeof agentHome>;
  let deb: { path: string; sha256: string };
  let calls: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ks-switch-crash-'));
    home = agentHome(join(dir, 'home'));
    calls = join(dir, 'calls');
    // The package's own bundle (0.1.0), launcher and agent-rollback.
    lib = join(dir, 'lib');
    mkdirSync(lib);
    for (const f of ['launch.sh', 'agent-rollback'])
      execFileSync('cp', [join(PROJECT, 'packaging', 'launchers', f), join(lib, f)]);
    writeFileSync(join(lib, 'keystone.mjs'), bundle('0.1.0'));
    writeFileSync(join(dir, 'keystone'), `#!/bin/sh\n. "$KEYSTONE_LIB/launch.sh"\nkeystone_exec keystone "$@"\n`);
    chmodSync(join(dir, 'keystone'), 0o755);
    // The package of 0.2.0.
    deb = fakeDeb(dir, { version: '0.2.0', bundle: bundle('0.2.0') });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** The agent of `version` starts and does its part; killed when `crashAt` is one of its steps. */
  const agent = (version: string, outcome: 'success' | 'failure', crashAt?: string) =>
    spawnSync(process.execPath, [RUNNER, home.dir, lib, version, outcome, deb.path, deb.sha256, calls], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, ...(crashAt !== undefined && { KEYSTONE_CRASH_AT: crashAt }) },
    });

  /** A boot: the launcher starts whatever it picks; that must be a working agent. */
  const boot = (): string => {
    const out = spawnSync(join(dir, 'keystone'), ['agent'], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        KEYSTONE_LIB: lib,
        KEYSTONE_NODE: process.execPath,
        KEYSTONE_AGENT_HOME: home.dir,
        INVOCATION_ID: 'boot',
      },
    });
    expect(out.status, out.stderr).toBe(0);
    const m = /^keystone (\d+\.\d+\.\d+) agent$/.exec(out.stdout.trim());
    expect(m, `the launcher started no working agent: ${out.stdout}${out.stderr}`).not.toBeNull();
    return m![1]!;
  };

  /** Boots until nothing changes any more (the agent that runs neither switches nor settles): the version it ends on. */
  const settle = (newWorks: boolean): string => {
    for (let i = 0; i < 8; i++) {
      const version = boot();
      const out = agent(version, newWorks ? 'success' : 'failure');
      expect(out.status, out.stderr).toBe(0);
      const did = out.stdout.trim();
      if (did === 'none' || did === 'failed') return version;
    }
    throw new Error('the device did not settle in 8 boots');
  };

  const firstSwitch = (crashAt?: string) => {
    const out = agent('0.1.0', 'success', crashAt);
    if (crashAt === undefined) expect(out.stdout.trim()).toBe('handover');
    return out;
  };

  for (const point of SWITCH_CRASH_POINTS) {
    it(`killed at ${point}: every boot runs an agent, and the device ends on the new version once it proves itself`, () => {
      const proving = point === 'update-proven' || point === 'update-after-commit';
      const first = firstSwitch(proving ? undefined : point);
      if (!proving) expect(first.signal).toBe('SIGKILL');
      else {
        // The new agent's proof is what is killed.
        expect(boot()).toBe('0.2.0');
        expect(agent('0.2.0', 'success', point).signal).toBe('SIGKILL');
      }
      expect(settle(true)).toBe('0.2.0');
      expect(readTrial(home)).toBeUndefined();
      expect(currentVersionDir(home)).toBe('0.2.0');
      expect(readFailed(home)).toBeUndefined();
    });
  }

  for (const point of ['rollback-after-current', 'rollback-after-failed']) {
    it(`killed at ${point} while a failing new agent is put back: every boot runs an agent, and the device ends on the previous version with the package recorded as failed`, () => {
      firstSwitch();
      expect(boot()).toBe('0.2.0');
      const out = agent('0.2.0', 'failure', point);
      expect(out.status).not.toBe(0);
      expect(settle(false)).toBe('0.1.0');
      expect(readTrial(home)).toBeUndefined();
      expect(existsSync(home.current)).toBe(false);
      // The reason agent-rollback gave, where it got as far as writing it.
      expect(readFailed(home)).toMatchObject({
        version: '0.2.0',
        sha256: deb.sha256,
        reason:
          point === 'rollback-after-failed'
            ? 'the new agent reported failure: the test says so'
            : '0.2.0 was put back, and the switch from 0.1.0 did not complete',
      });
    });
  }

  it('a new agent that never comes up is put back by the launcher at its fourth start', () => {
    firstSwitch();
    // Three starts of 0.2.0 that exit before proving anything (systemd restarts it each time).
    for (let i = 0; i < 3; i++) expect(boot()).toBe('0.2.0');
    expect(boot()).toBe('0.1.0');
    expect(readFailed(home)).toMatchObject({
      version: '0.2.0',
      reason: 'the new agent did not come up: 3 starts without reporting success',
    });
    expect(settle(true)).toBe('0.1.0');
  });
});

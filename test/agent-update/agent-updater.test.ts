// The agent's side of an agent update (SPEC §17) and the package's scripts that put a version back, on a real home
// directory with real packages (dpkg-deb builds and unpacks them, Node runs the staged bundle's --version) and the
// real launcher and agent-rollback run by sh. systemctl is the one thing recorded instead of run: restarting a unit
// is what the walkthrough (examples/agent-update/walkthrough.sh) does for real, under systemd in a container.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  agentHome,
  readFailed,
  readTrial,
  writeFailed,
  writeTrial,
  type AgentHome,
} from '../../src/agent-update/agent-home.js';
import { AgentUpdater, type AgentUpdaterDeps } from '../../src/agent-update/agent-updater.js';
import { currentVersionDir, restoreStateBefore } from '../../src/agent-update/agent-versions.js';
import { agentUpdater } from '../../src/agent-update/agent-update-setup.js';
import Sqlite from 'better-sqlite3';
import { openStateStore, STATE_DB_FILE } from '../../src/store/state-store.js';
import { agentSectionSchema, debianVersionOf, type AgentSection } from '../../src/core/agent-section.js';
import { removeStaleStaging } from '../../src/agent-update/stage-agent-package.js';
import { createLogger } from '../../src/log/logger.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import { needs } from '../support/requirements.js';
import { ARCH, fakeDeb } from './fake-deb.js';
import { parse as parseSchema } from '../../src/core/valid.js';

const r = needs('dpkg-deb');
const PROJECT = join(import.meta.dirname, '..', '..');

function section(
  version: string,
  pkg: { uri: string; sha256: string } | undefined,
  extra: Record<string, unknown> = {},
): AgentSection {
  return parseSchema(agentSectionSchema, { version, packages: pkg ? { [ARCH]: pkg } : {}, ...extra });
}

describe.skipIf(r.skip)(r.title('agent updates: staging, switching, proving, putting back'), () => {
  let dir: string;
  let home: AgentHome;
  let calls: string[][];
  let instances: Record<string, string>;
  const reader = () => new DirectoryReader(dir);
  const updater = (version: string, extra: Partial<AgentUpdaterDeps> = {}) =>
    new AgentUpdater({
      home,
      version,
      arch: ARCH,
      unit: 'keystone.service',
      packageLib: join(PROJECT, 'packaging', 'launchers'),
      node: process.execPath,
      cacheDir: join(dir, 'cache'),
      instances: () => ({ ...instances }),
      log: createLogger({ pretty: false, write: () => undefined }),
      now: () => 1_700_000_000_000,
      exec: async (file, args, env) => {
        calls.push([file, ...args]);
        // The rollback is the package's script, run for real; systemctl only recorded.
        if (file === '/bin/sh') execFileSync(file, args, { env: { ...env, PATH: process.env.PATH } });
      },
      ...extra,
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ks-agent-update-'));
    home = agentHome(join(dir, 'home'));
    calls = [];
    instances = { api: '4242', web: 'c-0123456789ab' };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves the agent alone without [agent], or when it names the running version', async () => {
    const u = updater('0.1.0');
    expect(await u.decide(undefined, { id: 'a'.repeat(40) }, reader())).toEqual({ kind: 'none' });
    expect(await u.decide(section('0.1.0', undefined), { id: 'a'.repeat(40) }, reader())).toEqual({ kind: 'none' });
    expect(existsSync(home.dir)).toBe(false);
  });

  it('refuses bad input and changes nothing: no package for this architecture, a downgrade, a wrong digest, another architecture, a package that says another version', async () => {
    const u = updater('0.2.0');
    const good = fakeDeb(dir, { version: '0.3.0' });
    const refusal = async (s: AgentSection) => {
      const d = await u.decide(s, { id: 'b'.repeat(40) }, reader());
      expect(d.kind).toBe('refuse');
      return d.kind === 'refuse' ? d.reason : '';
    };
    expect(await refusal(section('0.3.0', undefined))).toMatch(/^KS_AGENT_NO_PACKAGE: .* no package for /);
    expect(await refusal(section('0.1.0', { uri: `file://${good.path}`, sha256: good.sha256 }))).toMatch(
      /^KS_AGENT_DOWNGRADE: .*allow_downgrade = true/,
    );
    expect(await refusal(section('0.3.0', { uri: `file://${good.path}`, sha256: 'f'.repeat(64) }))).toMatch(
      /^KS_AGENT_PACKAGE_DIGEST: /,
    );
    const other = fakeDeb(dir, { version: '0.3.0', arch: ARCH === 'arm64' ? 'amd64' : 'arm64' });
    expect(await refusal(section('0.3.0', { uri: `file://${other.path}`, sha256: other.sha256 }))).toMatch(
      /^KS_AGENT_PACKAGE_INVALID: .* is built for /,
    );
    const liar = fakeDeb(dir, { version: '0.3.0', says: 'keystone 0.2.5' });
    expect(await refusal(section('0.3.0', { uri: `file://${liar.path}`, sha256: liar.sha256 }))).toMatch(
      /says "keystone 0.2.5", not "keystone 0.3.0"/,
    );
    const notUs = fakeDeb(dir, { version: '0.3.0', name: 'other' });
    expect(await refusal(section('0.3.0', { uri: `file://${notUs.path}`, sha256: notUs.sha256 }))).toMatch(
      /is "other", not keystone/,
    );
    // Nothing switched, nothing to restart.
    expect(readTrial(home)).toBeUndefined();
    expect(currentVersionDir(home)).toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('stages a package from the repository beside the running agent, writes the trial, points current at it and restarts the unit', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    mkdirSync(join(dir, 'packages'));
    execFileSync('cp', [pkg.path, join(dir, 'packages', 'keystone.deb')]);
    const d = await updater('0.1.0').decide(
      section('0.2.0', { uri: 'packages/keystone.deb', sha256: pkg.sha256 }, { deadline: '90s' }),
      { id: 'c'.repeat(40) },
      reader(),
    );
    expect(d).toEqual({ kind: 'handover', version: '0.2.0' });
    expect(readFileSync(join(home.versions, '0.2.0', 'keystone.mjs'), 'utf8')).toContain('keystone 0.2.0');
    expect(readlinkSync(home.current)).toBe(join('versions', '0.2.0'));
    expect(readTrial(home)).toEqual({
      version: '0.2.0',
      previous: 'package',
      previousVersion: '0.1.0',
      commit: 'c'.repeat(40),
      sha256: pkg.sha256,
      deadline: 90,
      since: 1_700_000_000_000,
      pids: instances,
    });
    expect(calls).toEqual([['systemctl', 'restart', '--no-block', 'keystone.service']]);
  });

  it('on probation, the new agent stays once it reports success: the trial goes, the deadline timer is stopped', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const s = section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 });
    await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader());
    calls = [];
    const next = updater('0.2.0');
    expect(next.view()).toMatchObject({ state: 'trial', version: '0.2.0', commit: 'c'.repeat(40) });
    // The commit it was switched for, or a newer one asking for this version; not another version, not the resume of
    // the commit that ran before the switch.
    expect(next.settles('c'.repeat(40), s)).toBe(true);
    expect(next.settles('c'.repeat(40), undefined, { resumed: true })).toBe(true);
    expect(next.settles('e'.repeat(40), s)).toBe(true);
    expect(next.settles('e'.repeat(40), s, { resumed: true })).toBe(false);
    expect(next.settles('e'.repeat(40), undefined)).toBe(false);
    expect(next.settles('e'.repeat(40), section('0.3.0', undefined))).toBe(false);
    expect(next.notAdopted()).toEqual([]);
    instances = { api: '5151', web: 'c-0123456789ab' };
    expect(next.notAdopted()).toEqual(['api']);
    await next.settle('success', 'success: 0 started');
    expect(readTrial(home)).toBeUndefined();
    expect(currentVersionDir(home)).toBe('0.2.0');
    expect(calls).toEqual([['systemctl', 'stop', 'keystone-agent-deadline.timer']]);
    expect(next.view()).toBeUndefined();
  });

  it('on probation, a failure puts the previous version back (agent-rollback), and the old agent reports failure for that package without trying it again', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const s = section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 });
    await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader());
    calls = [];
    await updater('0.2.0').settle('failure', 'failure: api did not become healthy');
    expect(calls[0]).toEqual([
      '/bin/sh',
      join(PROJECT, 'packaging', 'launchers', 'agent-rollback'),
      '--restart',
      'the new agent reported failure: api did not become healthy',
    ]);
    expect(existsSync(home.current)).toBe(false);
    expect(readTrial(home)).toBeUndefined();
    expect(readFailed(home)).toMatchObject({
      version: '0.2.0',
      sha256: pkg.sha256,
      commit: 'c'.repeat(40),
      reason: 'the new agent reported failure: api did not become healthy',
    });
    const old = updater('0.1.0');
    expect(old.view()).toMatchObject({
      state: 'failed',
      version: '0.2.0',
      reason: 'the new agent reported failure: api did not become healthy',
    });
    // The version put back applies nothing more before its restart.
    expect(calls).toHaveLength(1);
    const again = await old.decide(s, { id: 'd'.repeat(40) }, reader());
    expect(again).toEqual({
      kind: 'failed',
      reason:
        'KS_AGENT_UPDATE_FAILED: agent 0.2.0 was put back on this device: the new agent reported failure: api did not become healthy',
    });
    // Another package of the same version is tried.
    const rebuilt = fakeDeb(dir, { version: '0.2.0' });
    calls = [];
    expect(
      await old.decide(
        section('0.2.0', { uri: `file://${rebuilt.path}`, sha256: rebuilt.sha256 }),
        { id: 'e'.repeat(40) },
        reader(),
      ),
    ).toEqual({ kind: 'handover', version: '0.2.0' });
  });

  it('a switch cut short before `current` moved is tried again; a put-back whose record was cut short is recorded as failed', () => {
    mkdirSync(home.dir, { recursive: true });
    const trial = {
      version: '0.2.0',
      previous: 'package',
      previousVersion: '0.1.0',
      commit: 'c'.repeat(40),
      sha256: 'a'.repeat(64),
      deadline: 300,
      since: 1,
      pids: {},
    };
    // Started once since (this start): the new version never ran.
    writeTrial(home, trial);
    writeFileSync(home.trialStarts, 'start\n');
    expect(updater('0.1.0').view()).toBeUndefined();
    expect(readTrial(home)).toBeUndefined();
    expect(existsSync(home.trialStarts)).toBe(false);
    // Started more: it ran, and was put back.
    writeTrial(home, trial);
    writeFileSync(home.trialStarts, 'start\nstart\n');
    const old = updater('0.1.0');
    expect(readTrial(home)).toBeUndefined();
    expect(old.view()).toMatchObject({
      state: 'failed',
      version: '0.2.0',
      reason: '0.2.0 was put back, and the switch from 0.1.0 did not complete',
    });
  });

  it('an agent that cannot update itself says so and applies the rest', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const u = updater('0.1.0', { unsupported: 'not run by systemd as a service' });
    expect(
      await u.decide(
        section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 }),
        { id: 'c'.repeat(40) },
        reader(),
      ),
    ).toEqual({ kind: 'none' });
    expect(u.view()).toEqual({ state: 'unsupported', version: '0.2.0', reason: 'not run by systemd as a service' });
    expect(existsSync(home.dir)).toBe(false);
  });

  it('the launcher counts the starts of a version on probation and puts the previous one back at the fourth', () => {
    mkdirSync(join(home.versions, '0.1.0'), { recursive: true });
    mkdirSync(join(home.versions, '0.2.0'), { recursive: true });
    for (const v of ['0.1.0', '0.2.0'])
      writeFileSync(
        join(home.versions, v, 'keystone.mjs'),
        `console.log('keystone ${v}', process.argv.slice(2).join(' '));\n`,
      );
    execFileSync('ln', ['-s', 'versions/0.2.0', home.current]);
    writeTrial(home, {
      version: '0.2.0',
      previous: '0.1.0',
      previousVersion: '0.1.0',
      commit: 'c'.repeat(40),
      sha256: 'a'.repeat(64),
      deadline: 300,
      since: 1,
      pids: {},
    });
    const lib = mkdtempSync(join(dir, 'lib-'));
    for (const f of ['launch.sh', 'agent-rollback'])
      execFileSync('cp', [join(PROJECT, 'packaging', 'launchers', f), join(lib, f)]);
    writeFileSync(join(lib, 'keystone.mjs'), "console.log('keystone package');\n");
    const launcher = join(dir, 'keystone');
    writeFileSync(launcher, `#!/bin/sh\n. "$KEYSTONE_LIB/launch.sh"\nkeystone_exec keystone "$@"\n`);
    chmodSync(launcher, 0o755);
    let service = true;
    const start = (...args: string[]) => {
      const out = spawnSync(launcher, args, {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          KEYSTONE_LIB: lib,
          KEYSTONE_NODE: process.execPath,
          KEYSTONE_AGENT_HOME: home.dir,
          ...(service && { INVOCATION_ID: 'unit' }),
        },
      });
      expect(out.status, out.stderr).toBe(0);
      return out.stdout.trim();
    };
    // keystonectl-like commands and `keystone --version` run the current version, and count nothing.
    expect(start('--version')).toBe('keystone 0.2.0 --version');
    expect(existsSync(home.trialStarts)).toBe(false);
    // `keystone agent` at a shell (no systemd unit) is not one of the service's starts.
    service = false;
    expect(start('agent', '--help')).toBe('keystone 0.2.0 agent --help');
    expect(existsSync(home.trialStarts)).toBe(false);
    service = true;
    expect(start('agent')).toBe('keystone 0.2.0 agent');
    expect(start('agent')).toBe('keystone 0.2.0 agent');
    expect(start('agent')).toBe('keystone 0.2.0 agent');
    expect(readFileSync(home.trialStarts, 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
    // The fourth start: 0.1.0 is put back, and runs.
    expect(start('agent')).toBe('keystone 0.1.0 agent');
    expect(readlinkSync(home.current)).toBe('versions/0.1.0');
    expect(readTrial(home)).toBeUndefined();
    expect(readFailed(home)).toMatchObject({
      version: '0.2.0',
      commit: 'c'.repeat(40),
      reason: 'the new agent did not come up: 3 starts without reporting success',
    });
    // Without a trial nothing is counted or put back.
    expect(start('agent')).toBe('keystone 0.1.0 agent');
    // A previous that was the package's own bundle: `current` goes, the package runs.
    writeTrial(home, {
      version: '0.1.0',
      previous: 'package',
      previousVersion: '0.0.9',
      commit: 'd'.repeat(40),
      sha256: 'b'.repeat(64),
      deadline: 300,
      since: 1,
      pids: {},
    });
    const rollback = spawnSync(
      '/bin/sh',
      [join(lib, 'agent-rollback'), 'the new agent did not report success within 300s'],
      { encoding: 'utf8', env: { PATH: process.env.PATH, KEYSTONE_AGENT_HOME: home.dir } },
    );
    expect(rollback.status).toBe(0);
    expect(existsSync(home.current)).toBe(false);
    expect(start('agent')).toBe('keystone package');
  });

  it('an agent put back whose store the new version migrated past starts from the copy taken before the switch', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const store = openStateStore(stateDir);
    store.recordRejected({ revision: 'f'.repeat(40), planFile: 'plans/p.toml', at: 1, reason: 'before the switch' });
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    await updater('0.1.0', { snapshot: (f) => store.snapshotTo(f) }).decide(
      section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 }),
      { id: 'c'.repeat(40) },
      reader(),
    );
    expect(statSync(home.stateBefore).mode & 0o777).toBe(0o600);
    store.close();
    // The new version migrates to a schema the old one does not know.
    const db = new Sqlite(join(stateDir, STATE_DB_FILE));
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, ?, 0)').run('from the future');
    db.close();
    expect(() => openStateStore(stateDir)).toThrow(expect.objectContaining({ code: 'KS_STATE_SCHEMA_TOO_NEW' }));
    const log = createLogger({ pretty: false, write: () => undefined });
    // Not after a success (no record of a failed update): the store is not replaced.
    expect(restoreStateBefore(home, join(stateDir, STATE_DB_FILE), 5, log)).toBe(false);
    writeFailed(home, {
      version: '0.2.0',
      sha256: pkg.sha256,
      commit: 'c'.repeat(40),
      reason: 'put back',
      at: 5,
      blocks: true,
    });
    expect(restoreStateBefore(home, join(stateDir, STATE_DB_FILE), 5, log)).toBe(true);
    const back = openStateStore(stateDir);
    expect(back.history({ limit: 10 }).map((h) => h.summary)).toEqual(['before the switch']);
    back.close();
    expect(existsSync(join(stateDir, `${STATE_DB_FILE}.newer-5`))).toBe(true);
    // Once: the copy is consumed.
    expect(restoreStateBefore(home, join(stateDir, STATE_DB_FILE), 6, log)).toBe(false);
  });

  it('refuses a package whose tree holds a link (or anything but plain files and directories), and strips set-id and write-by-others bits', async () => {
    const root = mkdtempSync(join(dir, 'deb-'));
    mkdirSync(join(root, 'DEBIAN'));
    writeFileSync(
      join(root, 'DEBIAN', 'control'),
      `Package: keystone\nVersion: 0.2.0\nArchitecture: ${ARCH}\nMaintainer: t <t@example.com>\nDescription: test\n`,
    );
    const elsewhere = mkdtempSync(join(dir, 'elsewhere-'));
    writeFileSync(join(elsewhere, 'keystone.mjs'), "console.log('keystone 0.2.0');\n");
    mkdirSync(join(root, 'usr', 'lib'), { recursive: true });
    execFileSync('ln', ['-s', elsewhere, join(root, 'usr', 'lib', 'keystone')]);
    const linked = join(dir, 'linked.deb');
    execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-b', root, linked], { stdio: 'ignore' });
    const sha = createHash('sha256').update(readFileSync(linked)).digest('hex');
    const d = await updater('0.1.0').decide(
      section('0.2.0', { uri: `file://${linked}`, sha256: sha }),
      { id: 'c'.repeat(40) },
      reader(),
    );
    expect(d).toEqual({
      kind: 'refuse',
      reason: expect.stringMatching(
        /^KS_AGENT_PACKAGE_INVALID: .* holds \/usr\/lib\/keystone, which is not a plain file or directory/,
      ),
    });
    expect(currentVersionDir(home)).toBeUndefined();
    // Modes: a group-writable set-uid file in a package arrives 0755.
    const pkg = fakeDeb(dir, { version: '0.2.0', mode: 0o4775 });
    await updater('0.1.0').decide(
      section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 }),
      { id: 'c'.repeat(40) },
      reader(),
    );
    expect(statSync(join(home.versions, '0.2.0', 'keystone.mjs')).mode & 0o7777).toBe(0o755);
    expect(statSync(home.versions).mode & 0o777).toBe(0o755);
  });

  it('on probation, another version waits', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    await updater('0.1.0').decide(
      section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 }),
      { id: 'c'.repeat(40) },
      reader(),
    );
    calls = [];
    const next = updater('0.2.0');
    const other = fakeDeb(dir, { version: '0.3.0' });
    expect(
      await next.decide(
        section('0.3.0', { uri: `file://${other.path}`, sha256: other.sha256 }),
        { id: 'd'.repeat(40) },
        reader(),
      ),
    ).toEqual({
      kind: 'deferred',
      reason: 'agent 0.2.0 is on probation: 0.3.0 waits until it has proven itself or was put back',
    });
    expect(readTrial(home)?.version).toBe('0.2.0');
    expect(existsSync(join(home.versions, '0.3.0'))).toBe(false);
    expect(calls).toEqual([]);
    // Its status says which version waits and for which commit, until a decision takes it away (the tip back on the
    // version on trial), or another revision is taken up (one held at its gate or window never reaches a decision).
    expect(next.view()).toMatchObject({ state: 'trial', version: '0.2.0', next: '0.3.0', nextCommit: 'd'.repeat(40) });
    next.takenUp('d'.repeat(40));
    expect(next.view()).toMatchObject({ next: '0.3.0' });
    next.takenUp('f'.repeat(40));
    expect(next.view()).not.toHaveProperty('next');
    await next.decide(
      section('0.3.0', { uri: `file://${other.path}`, sha256: other.sha256 }),
      { id: 'd'.repeat(40) },
      reader(),
    );
    expect(next.view()).toMatchObject({ next: '0.3.0' });
    await next.decide(
      section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 }),
      { id: 'e'.repeat(40) },
      reader(),
    );
    expect(next.view()).toMatchObject({ state: 'trial', version: '0.2.0' });
    expect(next.view()).not.toHaveProperty('next');
  });

  it('on probation, a plan that fails puts the new agent back without barring its package: the next commit tries it again', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const s = section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 });
    await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader());
    calls = [];
    await updater('0.2.0').settle('failure', 'failure: api did not become healthy', { blocks: false });
    expect(calls[0]).toEqual([
      '/bin/sh',
      join(PROJECT, 'packaging', 'launchers', 'agent-rollback'),
      '--restart',
      '--retry',
      'the new agent reported failure: api did not become healthy',
    ]);
    expect(readFailed(home)).toMatchObject({ version: '0.2.0', blocks: false });
    const old = updater('0.1.0');
    expect(old.view()).toMatchObject({ state: 'failed', version: '0.2.0' });
    expect(await old.decide(s, { id: 'd'.repeat(40) }, reader())).toEqual({ kind: 'handover', version: '0.2.0' });
  });

  it('a success that comes after the deadline put the previous version back changes nothing; the new agent then applies nothing more', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const s = section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 });
    await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader());
    const next = updater('0.2.0');
    const since = String(readTrial(home)!.since);
    // The timer's agent-rollback: not for another trial's start; then for this one.
    const run = (...args: string[]) =>
      spawnSync('/bin/sh', [join(PROJECT, 'packaging', 'launchers', 'agent-rollback'), ...args], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, KEYSTONE_AGENT_HOME: home.dir },
      });
    expect(run('--only-since', 'x', 'late').status).toBe(2);
    expect(run('--only-since', '12', 'late').status).toBe(0);
    expect(readTrial(home)).toBeDefined();
    expect(run('--only-since', since, 'the new agent did not report success within 300s').status).toBe(0);
    expect(readTrial(home)).toBeUndefined();
    calls = [];
    await next.settle('success', 'success: 1 running');
    expect(readFailed(home)).toMatchObject({
      version: '0.2.0',
      reason: 'the new agent did not report success within 300s',
    });
    expect(currentVersionDir(home)).toBeUndefined();
    expect(calls).toEqual([]);
    expect(await next.decide(section('0.3.0', undefined), { id: 'd'.repeat(40) }, reader())).toEqual({
      kind: 'handover',
      version: '0.1.0',
    });
  });

  it('a device that does not allow agent updates (no --allow-agent-update) says so and stages nothing', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const u = agentUpdater({
      stateDir,
      log: createLogger({ pretty: false, write: () => undefined }),
      store: () => openStateStore(stateDir),
      now: () => 1,
      allowed: false,
      home: home.dir,
      unit: 'keystone.service',
    });
    expect(
      await u.decide(
        section('9.9.9', { uri: `file://${pkg.path}`, sha256: pkg.sha256 }),
        { id: 'c'.repeat(40) },
        reader(),
      ),
    ).toEqual({ kind: 'none' });
    expect(u.view()).toEqual({
      state: 'unsupported',
      version: '9.9.9',
      reason: 'this device does not allow agent updates (--allow-agent-update, allow-agent-update = true)',
    });
    expect(existsSync(home.dir)).toBe(false);
  });

  it('allow_downgrade = true lets an older version through: staged, switched to, handed over; without it, KS_AGENT_DOWNGRADE', async () => {
    const older = fakeDeb(dir, { version: '0.1.0' });
    const pkg = { uri: `file://${older.path}`, sha256: older.sha256 };
    const refused = await updater('0.2.0').decide(section('0.1.0', pkg), { id: 'b'.repeat(40) }, reader());
    expect(refused).toEqual({
      kind: 'refuse',
      reason: expect.stringMatching(
        /^KS_AGENT_DOWNGRADE: fleet.toml's \[agent\] names 0.1.0, older than this agent \(0.2.0\)/,
      ),
    });
    expect(existsSync(home.dir)).toBe(false);
    const d = await updater('0.2.0').decide(
      section('0.1.0', pkg, { allow_downgrade: true }),
      { id: 'c'.repeat(40) },
      reader(),
    );
    expect(d).toEqual({ kind: 'handover', version: '0.1.0' });
    expect(currentVersionDir(home)).toBe('0.1.0');
    expect(readTrial(home)).toMatchObject({
      version: '0.1.0',
      previousVersion: '0.2.0',
      previous: 'package',
      commit: 'c'.repeat(40),
    });
    expect(calls).toEqual([['systemctl', 'restart', '--no-block', 'keystone.service']]);
  });

  it('refuses [agent] from an unsigned revision (KS_AGENT_UNSIGNED) and stages nothing; naming the running version, or on an agent that cannot update itself, it asks nothing', async () => {
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const s = section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 });
    expect(await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader(), { unsigned: true })).toEqual({
      kind: 'refuse',
      reason: expect.stringMatching(
        /^KS_AGENT_UNSIGNED: fleet.toml's \[agent\] names 0.2.0, in a revision whose signatures were not checked/,
      ),
    });
    expect(existsSync(home.dir)).toBe(false);
    expect(calls).toEqual([]);
    expect(await updater('0.2.0').decide(s, { id: 'c'.repeat(40) }, reader(), { unsigned: true })).toEqual({
      kind: 'none',
    });
    expect(
      await updater('0.1.0', { unsupported: 'not run by systemd as a service' }).decide(
        s,
        { id: 'c'.repeat(40) },
        reader(),
        { unsigned: true },
      ),
    ).toEqual({ kind: 'none' });
    // Signed (the default), the same section switches.
    expect(await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader())).toEqual({
      kind: 'handover',
      version: '0.2.0',
    });
  });

  it("compares the package's Debian Version with [agent] version: a mismatch is KS_AGENT_PACKAGE_VERSION; a pre-release matches in Debian's form", async () => {
    expect(debianVersionOf('0.3.0')).toBe('0.3.0');
    expect(debianVersionOf('0.3.0-rc.1')).toBe('0.3.0~rc.1');
    expect(debianVersionOf('0.3.0-beta-2+b7')).toBe('0.3.0~beta.2+b7');
    const relabelled = fakeDeb(dir, { version: '0.3.0', debVersion: '0.2.9' });
    const d = await updater('0.2.0').decide(
      section('0.3.0', { uri: `file://${relabelled.path}`, sha256: relabelled.sha256 }),
      { id: 'b'.repeat(40) },
      reader(),
    );
    expect(d).toEqual({
      kind: 'refuse',
      reason:
        'KS_AGENT_PACKAGE_VERSION: the package for ' +
        ARCH +
        ' is version 0.2.9, not 0.3.0 as [agent] version = "0.3.0" says',
    });
    // npm's form in the control file is not Debian's: refused too (dpkg would sort 0.3.0-rc.1 after 0.3.0).
    const npmForm = fakeDeb(dir, { version: '0.3.0-rc.1', debVersion: '0.3.0-rc.1' });
    expect(
      await updater('0.2.0').decide(
        section('0.3.0-rc.1', { uri: `file://${npmForm.path}`, sha256: npmForm.sha256 }),
        { id: 'b'.repeat(40) },
        reader(),
      ),
    ).toMatchObject({
      kind: 'refuse',
      reason: expect.stringMatching(/^KS_AGENT_PACKAGE_VERSION: .* is version 0.3.0-rc.1, not 0.3.0~rc.1 /),
    });
    expect(readTrial(home)).toBeUndefined();
    expect(currentVersionDir(home)).toBeUndefined();
    const rc = fakeDeb(dir, { version: '0.3.0-rc.1' });
    expect(
      await updater('0.2.0').decide(
        section('0.3.0-rc.1', { uri: `file://${rc.path}`, sha256: rc.sha256 }),
        { id: 'c'.repeat(40) },
        reader(),
      ),
    ).toEqual({ kind: 'handover', version: '0.3.0-rc.1' });
  });

  it('a .staging-* directory left by a kill during the unpacking is removed at the next staging, and by the prune after a success', async () => {
    // Cut short during dpkg-deb -x: a half-unpacked tree beside the versions.
    const leftover = join(home.versions, '.staging-AbC123');
    mkdirSync(join(leftover, 'usr', 'lib', 'keystone'), { recursive: true });
    writeFileSync(join(leftover, 'usr', 'lib', 'keystone', 'keystone.mjs'), 'half');
    const pkg = fakeDeb(dir, { version: '0.2.0' });
    const s = section('0.2.0', { uri: `file://${pkg.path}`, sha256: pkg.sha256 });
    expect(await updater('0.1.0').decide(s, { id: 'c'.repeat(40) }, reader())).toEqual({
      kind: 'handover',
      version: '0.2.0',
    });
    expect(readdirSync(home.versions)).toEqual(['0.2.0']);
    // Another kill during the next staging's unpacking; the new agent proves itself: the prune removes it too.
    mkdirSync(join(home.versions, '.staging-XyZ789'));
    await updater('0.2.0').settle('success', 'success: 0 started');
    expect(readdirSync(home.versions)).toEqual(['0.2.0']);
    // The helper on its own: only .staging-* names, none of the versions; a missing directory is nothing to do.
    mkdirSync(join(home.versions, '.staging-1'));
    expect(removeStaleStaging(home.versions)).toEqual(['.staging-1']);
    expect(readdirSync(home.versions)).toEqual(['0.2.0']);
    expect(removeStaleStaging(join(dir, 'nowhere'))).toEqual([]);
  });
});

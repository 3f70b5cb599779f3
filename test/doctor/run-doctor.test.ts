// Every check together, against the example repository (a signed Git copy of it) and a real state directory: the
// happy path as --dir and as --repo, what changes when nothing was applied yet, a plan that does not load, the fleet
// file picking the plan, a plan with containers on a device without an engine; and the state directory untouched.
import { copyFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allPassed, CHECK_IDS, type CheckResult, type CheckStatus } from '../../src/doctor/check-result.js';
import type { DoctorSetup } from '../../src/doctor/doctor-setup.js';
import { runDoctor } from '../../src/doctor/run-doctor.js';
import { ensureDeviceKeys } from '../../src/identity/device-keys.js';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';
import { facts, scratch, setup, snapshot, stateWithApplied, trusting, type Scratch } from './doctor-fixtures.js';

let repo: ExampleRepo;
let s: Scratch;
let head: string;
const HOUR = 3600;
const DAY = 24 * HOUR;

beforeAll(async () => {
  repo = await exampleRepo({ signed: true });
  head = repo.git('rev-parse', 'HEAD');
  s = scratch();
});
afterAll(() => {
  repo.cleanup();
  s.cleanup();
});

const statuses = (results: CheckResult[]) =>
  Object.fromEntries(results.map((r) => [r.check, r.status])) as Record<string, CheckStatus>;
const byId = (results: CheckResult[], id: string) => results.find((r) => r.check === id)!;
const signedSetup = (stateDir: string, over: Partial<DoctorSetup>): DoctorSetup =>
  setup({ stateDir, ...trusting([repo.trust[1]!]), planFile: 'plans/edge-processes.toml', ...over });

describe('runDoctor on the example repository', () => {
  it('--dir with a state directory the agent applied a signed revision in: every check passes', async () => {
    const stateDir = join(s.dir, 'dir-state');
    const now = Date.now();
    // Applied before the directory was signed (example-repo signs a day in the past): its signature is no replay.
    stateWithApplied(stateDir, {
      id: 'dir:f41ef900a015',
      source: repo.dir,
      planFile: 'plans/edge-processes.toml',
      signedAt: Math.floor(now / 1000) - 2 * DAY,
    });
    await ensureDeviceKeys(stateDir, { now: () => now, randomBytes: (n) => new Uint8Array(n).fill(7), create: true });
    const results = await runDoctor(
      signedSetup(stateDir, { source: { kind: 'dir', root: repo.dir } }),
      facts({ now: () => now }),
    );
    expect(results.map((r) => r.check)).toEqual([...CHECK_IDS]);
    const { 'container-engine': engine, ...rest } = statuses(results);
    expect(rest).toEqual({
      settings: 'pass',
      'node-version': 'pass',
      setpriv: 'pass',
      source: 'pass',
      'state-dir': 'pass',
      'disk-space': 'pass',
      'trusted-keys': 'pass',
      'trusted-files': 'pass',
      identity: 'pass',
      enrollment: 'skip',
      'git-remote': 'skip',
      'push-access': 'skip',
      plan: 'pass',
      'first-revision': 'pass',
      'run-users': process.getuid?.() === 0 ? 'pass' : 'warn',
      'work-dir-reach': 'pass',
      clock: 'pass',
    });
    // Informational for a plan of processes: an engine here or not, it is no failure.
    expect(['pass', 'skip']).toContain(engine);
    expect(byId(results, 'plan').detail).toBe(
      `plans/edge-processes.toml (--plan) from directory ${repo.dir}: 4 components (4 processes)`,
    );
    // The directory is the revision the agent takes first: its signature is verified with the device's keys.
    expect(byId(results, 'first-revision').detail).toMatch(
      new RegExp(
        `^directory ${repo.dir}: signed by [0-9A-F]+ at \\S+Z; the revision the agent takes first is the directory as it is now`,
      ),
    );
    expect(byId(results, 'settings').detail).toMatch(/^keystone agent takes every setting given/);
    expect(allPassed(results)).toBe(true);
  });

  it('--repo (a local repository) reads the plan of the commit applied last, and changes nothing in the state directory', async () => {
    const stateDir = join(s.dir, 'git-state');
    const now = Date.now();
    stateWithApplied(stateDir, {
      id: head,
      source: `git ${repo.dir} main`,
      planFile: 'plans/edge-processes.toml',
      signedAt: Math.floor(now / 1000) - HOUR,
    });
    const before = snapshot(stateDir);
    const results = await runDoctor(
      signedSetup(stateDir, { source: { kind: 'git', repo: repo.dir, ref: 'main', gitNotes: true } }),
      facts({ now: () => now }),
    );
    expect(snapshot(stateDir)).toEqual(before);
    expect(byId(results, 'git-remote')).toMatchObject({
      status: 'pass',
      detail: `${repo.dir} main is at ${head.slice(0, 12)}`,
    });
    expect(byId(results, 'plan')).toMatchObject({
      status: 'pass',
      detail: `plans/edge-processes.toml (--plan) from commit ${head.slice(0, 12)} (applied last): 4 components (4 processes)`,
    });
    expect(byId(results, 'clock').status).toBe('pass');
    expect(allPassed(results)).toBe(true);
  });

  it('--repo with nothing applied yet: the plan is not known, which fails nothing', async () => {
    const results = await runDoctor(
      signedSetup(join(s.dir, 'fresh'), { source: { kind: 'git', repo: repo.dir, ref: 'main', gitNotes: true } }),
      facts(),
    );
    expect(byId(results, 'plan')).toMatchObject({
      status: 'skip',
      detail: `not known yet: nothing was applied from Git with the state directory ${join(s.dir, 'fresh')}`,
    });
    expect(byId(results, 'run-users').status).toBe('skip');
    expect(byId(results, 'clock').status).toBe('skip');
    // The tip is verified as the agent verifies it at its first poll, then loaded.
    expect(byId(results, 'first-revision')).toMatchObject({
      status: 'pass',
      detail: expect.stringMatching(
        /^commit [0-9a-f]{12} \(the tip of main\), signed by [0-9A-F]+ at \S+Z, loads for device doctor-test: plans\/edge-processes\.toml \(--plan\), 4 components$/,
      ),
    });
    expect(allPassed(results)).toBe(true);
  });

  it('without --plan, fleet.toml picks the plan by the device’s name and labels', async () => {
    const withFleet = join(s.dir, 'with-fleet');
    cpSync(repo.dir, withFleet, { recursive: true });
    copyFileSync(join(PROJECT_ROOT, 'fleet.toml'), join(withFleet, 'fleet.toml'));
    const base = {
      source: { kind: 'dir' as const, root: withFleet },
      trust: { unsigned: true, keyFiles: [] },
      planFile: undefined,
    };
    const edge = await runDoctor(signedSetup(join(s.dir, 'fleet-state'), base), facts());
    expect(byId(edge, 'plan').detail).toBe(
      `plans/edge-processes.toml (fleet.toml target edge) from directory ${withFleet}: 4 components (4 processes)`,
    );
    const gateway = await runDoctor(
      signedSetup(join(s.dir, 'fleet-state'), { ...base, labels: { role: 'gateway', region: 'eu' } }),
      facts(),
    );
    expect(byId(gateway, 'plan').detail).toMatch(
      /^plans\/edge-gateway\.toml \(fleet\.toml target gateways-eu\) from directory /,
    );
    // The example copy without fleet.toml and without --plan: the agent would refuse every revision.
    const none = await runDoctor(
      signedSetup(join(s.dir, 'fleet-state'), { ...base, source: { kind: 'dir', root: repo.dir } }),
      facts(),
    );
    expect(byId(none, 'plan')).toMatchObject({ status: 'fail', code: 'KS_FLEET_MISSING' });
  });

  it('fails a plan that does not load, naming the file and the TOML path', async () => {
    const broken = join(s.dir, 'broken');
    cpSync(repo.dir, broken, { recursive: true });
    const recipe = join(broken, 'recipes', 'com.acme.api.toml');
    writeFileSync(recipe, readFileSync(recipe, 'utf8').replace(/interval = "[^"]+"/, 'interval = "soon"'));
    const results = await runDoctor(
      signedSetup(join(s.dir, 'broken-state'), {
        source: { kind: 'dir', root: broken },
        trust: { unsigned: true, keyFiles: [] },
      }),
      facts(),
    );
    const plan = byId(results, 'plan');
    expect(plan).toMatchObject({ status: 'fail', code: 'KS_BAD_DURATION' });
    expect(plan.detail).toMatch(
      /^plans\/edge-processes\.toml from directory .* does not load: recipes\/com\.acme\.api\.toml:\d+: lifecycle\.run\.health\.interval: /,
    );
    expect(byId(results, 'run-users').status).toBe('skip');
    expect(allPassed(results)).toBe(false);
  });

  it('fails the engine for the plan with a container (plans/edge.toml) on a device without one', async () => {
    const results = await runDoctor(
      signedSetup(join(s.dir, 'engine-state'), {
        source: { kind: 'dir', root: repo.dir },
        planFile: 'plans/edge.toml',
      }),
      facts({ engineSockets: { docker: [join(s.dir, 'no-docker.sock')], podman: [join(s.dir, 'no-podman.sock')] } }),
    );
    expect(byId(results, 'container-engine')).toMatchObject({
      status: 'fail',
      code: 'KS_CONTAINER_ENGINE_UNAVAILABLE',
    });
    expect(byId(results, 'container-engine').detail).toMatch(
      /^the plan runs web as container, and no Docker or Podman engine answered/,
    );
    expect(allPassed(results)).toBe(false);
  });

  it('fails the source when there is none, and skips what needs one', async () => {
    const results = await runDoctor(setup({ stateDir: join(s.dir, 'no-source') }), facts());
    expect(statuses(results)).toMatchObject({
      source: 'fail',
      'git-remote': 'skip',
      plan: 'skip',
      'run-users': 'skip',
    });
  });
});

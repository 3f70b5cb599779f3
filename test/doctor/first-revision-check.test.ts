// The first-revision check over a real local Git repository (a copy of the example) and real directories: a Git device
// that applied nothing yet fails doctor when its agent would refuse the branch's tip (no --plan and no fleet.toml, no
// target for the device, a --plan that does not exist), each with its fix in the line; passes when the tip loads;
// warns when a device already runs a commit; skips a remote (not fetched) and says why. For --dir, the plan line
// carries the same fix.
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAppliedState } from '../../src/doctor/applied-state.js';
import { allPassed, type CheckResult } from '../../src/doctor/check-result.js';
import type { DoctorSetup } from '../../src/doctor/doctor-setup.js';
import { checkFirstRevision } from '../../src/doctor/first-revision-check.js';
import { runDoctor } from '../../src/doctor/run-doctor.js';
import type { CliIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/keystone.js';
import { doctorText } from '../../src/cli/render/doctor-text.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';
import { facts, scratch, setup, stateWithApplied, type Scratch } from './doctor-fixtures.js';

let repo: ExampleRepo;
let s: Scratch;
let n = 0;
beforeAll(async () => {
  repo = await exampleRepo({ signed: false });
  s = scratch();
});
afterAll(() => {
  repo.cleanup();
  s.cleanup();
});

const byId = (results: CheckResult[], id: string) => results.find((r) => r.check === id)!;
const gitSetup = (over: Partial<DoctorSetup> = {}): DoctorSetup =>
  setup({ stateDir: join(s.dir, `state-${++n}`), source: { kind: 'git', repo: repo.dir, ref: 'main', gitNotes: false }, ...over });
const first = (st: DoctorSetup) => checkFirstRevision(st, readAppliedState(st.stateDir), true);
const PLANS = 'plans/edge-gateway.toml, plans/edge-processes.toml, plans/edge.toml';

describe('first-revision: a Git device that applied nothing yet', () => {
  it('fails doctor when there is no --plan and no fleet.toml, with the fix in its line (exit 1 in the CLI)', async () => {
    const st = gitSetup();
    const results = await runDoctor(st, facts());
    const r = byId(results, 'first-revision');
    expect(r).toMatchObject({ status: 'fail', code: 'KS_FLEET_MISSING' });
    expect(r.detail).toMatch(/^commit [0-9a-f]{12} \(the tip of main\) has no fleet\.toml and no --plan is given/);
    expect(r.fix).toBe(`give --plan PLAN (its plans: ${PLANS}), or add fleet.toml with [[targets]] that select this device (docs/fleets.md)`);
    // The plan line alone would have said nothing is known yet: doctor said ready before this check.
    expect(byId(results, 'plan').status).toBe('skip');
    expect(allPassed(results)).toBe(false);
    const line = doctorText(results).split('\n').find((l) => l.startsWith('✗ first-revision'));
    expect(line).toContain('[KS_FLEET_MISSING] — fix: give --plan PLAN');
    // As people run it: `keystone doctor --repo PATH` exits 1 with that line.
    let stdout = '';
    const io: CliIo = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: () => true }, cwd: s.dir, env: process.env, now: Date.now };
    const code = await main(['doctor', '--repo', repo.dir, '--allow-unsigned', '--status', 'none', '--state-dir', join(s.dir, 'cli-state')], io, { once: () => undefined });
    expect(code, stdout).toBe(1);
    expect(stdout).toMatch(/^✗ first-revision +commit [0-9a-f]{12} \(the tip of main\) has no fleet\.toml .*\[KS_FLEET_MISSING\] — fix: give --plan PLAN/m);
  });

  it('fails when no target of fleet.toml takes the device, naming the targets', async () => {
    writeFileSync(join(repo.dir, 'fleet.toml'), '[[targets]]\nname = "pis"\nselector = { hw = "pi4" }\nplan = "plans/edge-processes.toml"\n');
    repo.commit('fleet: pi4 only');
    try {
      const r = await first(gitSetup({ device: 'edge-7', labels: { hw: 'x86' } }));
      expect(r).toMatchObject({ status: 'fail', code: 'KS_FLEET_NO_TARGET' });
      expect(r.detail).toMatch(/^no target of fleet\.toml in commit [0-9a-f]{12} \(the tip of main\) takes device edge-7 \(hw=x86\)$/);
      expect(r.fix).toMatch(/^give --device NAME or --label KEY=VALUE values a target selects \(targets: pis;.*\), add a target for this device to fleet\.toml, or give --plan PLAN$/);
      // The same fleet with the device's labels matching: it loads.
      expect(await first(gitSetup({ device: 'edge-7', labels: { hw: 'pi4' } }))).toMatchObject({
        status: 'pass',
        detail: expect.stringMatching(/loads for device edge-7: plans\/edge-processes\.toml \(fleet\.toml target pis\), 4 components$/),
      });
    } finally {
      rmSync(join(repo.dir, 'fleet.toml'));
      repo.commit('fleet: gone again');
    }
  });

  it('fails a --plan that does not exist, listing the plans there', async () => {
    const r = await first(gitSetup({ planFile: 'plans/edge-procesess.toml' }));
    expect(r).toMatchObject({ status: 'fail', code: 'KS_FILE_NOT_FOUND' });
    expect(r.detail).toMatch(/^--plan plans\/edge-procesess\.toml does not exist in commit [0-9a-f]{12} \(the tip of main\)$/);
    expect(r.fix).toBe(`give --plan one of the repository's plans (its plans: ${PLANS}), or leave --plan out to take the plan from fleet.toml`);
  });

  it('passes when the tip loads for the device', async () => {
    const r = await first(gitSetup({ planFile: 'plans/edge-processes.toml' }));
    expect(r.status).toBe('pass');
    expect(r.detail).toMatch(/^commit [0-9a-f]{12} \(the tip of main\) loads for device doctor-test: plans\/edge-processes\.toml \(--plan\), 4 components$/);
  });
});

describe('first-revision: otherwise', () => {
  it('a device that runs a commit keeps it when the tip is refused: a warning, not a failure', async () => {
    const old = repo.git('rev-parse', 'HEAD');
    writeFileSync(join(repo.dir, 'note.txt'), 'a newer commit\n');
    repo.commit('a newer tip');
    const st = gitSetup();
    stateWithApplied(st.stateDir, { id: old, source: `git ${repo.dir} main`, planFile: 'plans/edge-processes.toml' });
    const r = await first(st);
    expect(r.status).toBe('warn');
    expect(r.detail).toMatch(new RegExp(`^the agent would refuse the next revision and keep running ${old.slice(0, 12)}: .*\\[KS_FLEET_MISSING\\]$`));
    expect(r.fix).toMatch(/^give --plan PLAN/);
    // The tip is the commit applied last: the plan line says it.
    const at = gitSetup();
    stateWithApplied(at.stateDir, { id: repo.git('rev-parse', 'HEAD'), source: `git ${repo.dir} main`, planFile: 'plans/edge-processes.toml' });
    expect((await first(at)).status).toBe('skip');
  });

  it('a remote repository is not fetched: skipped, saying why', async () => {
    const r = await first(gitSetup({ source: { kind: 'git', repo: 'https://git.example.invalid/fleet.git', ref: 'main', gitNotes: false } }));
    expect(r.status).toBe('skip');
    expect(r.detail).toBe('not read: doctor does not fetch from https://git.example.invalid/fleet.git (it writes no Git cache), so the tip of main is first read by the agent; in a checkout of it, keystonectl apply-dry --fleet shows what each target would run');
  });

  it('a branch the repository does not have is skipped (git-remote fails it)', async () => {
    const r = await first(gitSetup({ source: { kind: 'git', repo: repo.dir, ref: 'nope', gitNotes: false } }));
    expect(r.status).toBe('skip');
    expect(r.detail).toMatch(/^not read: .*nope.* \(see git-remote\)$/);
  });

  it('--dir: the plan line fails with the same fix, and first-revision points at it', async () => {
    const dir = join(s.dir, 'dir-repo');
    mkdirSync(dir);
    cpSync(join(repo.dir, 'recipes'), join(dir, 'recipes'), { recursive: true });
    cpSync(join(repo.dir, 'plans'), join(dir, 'plans'), { recursive: true });
    const st = setup({ stateDir: join(s.dir, 'dir-state'), source: { kind: 'dir', root: dir } });
    const results = await runDoctor(st, facts());
    expect(byId(results, 'plan')).toMatchObject({
      status: 'fail',
      code: 'KS_FLEET_MISSING',
      detail: `directory ${dir} has no fleet.toml and no --plan is given: the agent refuses every revision until one picks the plan`,
      fix: `give --plan PLAN (its plans: ${PLANS}), or add fleet.toml with [[targets]] that select this device (docs/fleets.md)`,
    });
    expect(byId(results, 'first-revision').status).toBe('skip');
    const missing = await runDoctor({ ...st, planFile: 'plans/nope.toml' }, facts());
    expect(byId(missing, 'plan')).toMatchObject({ status: 'fail', code: 'KS_FILE_NOT_FOUND', detail: `--plan plans/nope.toml does not exist in directory ${dir}` });
  });
});

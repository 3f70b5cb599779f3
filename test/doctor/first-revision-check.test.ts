// The first-revision check over a real local Git repository (a copy of the example) and real directories: a Git device
// that applied nothing yet fails doctor when its agent would refuse the branch's tip (no --plan and no fleet.toml, no
// target for the device, a --plan that does not exist), each with its fix in the line; passes when the tip loads;
// warns when a device already runs a commit; skips a remote (not fetched) and says why. For --dir, the plan line
// carries the same fix. The tip (or the directory) is verified first with the device's trusted keys, as the agent
// verifies it: unsigned, signed by a key it does not trust, older than --max-age, a file added after signing each
// fail with the agent's code; --allow-unsigned verifies nothing.
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
import { runCtl } from '../support/cli-run.js';
import { exampleRepo, type ExampleRepo } from '../support/example-repo.js';
import { facts, scratch, setup, stateWithApplied, trusting, type Scratch } from './doctor-fixtures.js';

let repo: ExampleRepo;
/** The example signed with its own throwaway key (example-repo.ts: keystonectl keygen and sign, a day in the past). */
let signed: ExampleRepo;
let s: Scratch;
/** A public key that signed neither repository. */
let otherKey: string;
let n = 0;
beforeAll(async () => {
  repo = await exampleRepo({ signed: false });
  signed = await exampleRepo({ signed: true });
  s = scratch();
  const r = await runCtl(['keygen', '--out', join(s.dir, 'other'), '--no-password'], s.dir);
  if (r.code !== 0) throw new Error(r.stderr);
  otherKey = join(s.dir, 'other.pub');
});
afterAll(() => {
  repo.cleanup();
  signed?.cleanup();
  s.cleanup();
});

const byId = (results: CheckResult[], id: string) => results.find((r) => r.check === id)!;
const gitSetup = (over: Partial<DoctorSetup> = {}): DoctorSetup =>
  setup({
    stateDir: join(s.dir, `state-${++n}`),
    source: { kind: 'git', repo: repo.dir, ref: 'main', gitNotes: false },
    ...over,
  });
const first = (st: DoctorSetup, now = Date.now()) => checkFirstRevision(st, readAppliedState(st.stateDir), true, now);
/** The signed repository's own public key. */
const trustedKey = () => signed.trust[1]!;
const PLANS = 'plans/edge-gateway.toml, plans/edge-processes.toml, plans/edge.toml';

describe('first-revision: a Git device that applied nothing yet', () => {
  it('fails doctor when there is no --plan and no fleet.toml, with the fix in its line (exit 1 in the CLI)', async () => {
    const st = gitSetup();
    const results = await runDoctor(st, facts());
    const r = byId(results, 'first-revision');
    expect(r).toMatchObject({ status: 'fail', code: 'KS_FLEET_MISSING' });
    expect(r.detail).toMatch(/^commit [0-9a-f]{12} \(the tip of main\) has no fleet\.toml and no --plan is given/);
    expect(r.fix).toBe(
      `give --plan PLAN (its plans: ${PLANS}), or add fleet.toml with [[targets]] that select this device (docs/fleets.md)`,
    );
    // The plan line alone would have said nothing is known yet: doctor said ready before this check.
    expect(byId(results, 'plan').status).toBe('skip');
    expect(allPassed(results)).toBe(false);
    const line = doctorText(results)
      .split('\n')
      .find((l) => l.startsWith('✗ first-revision'));
    expect(line).toContain('[KS_FLEET_MISSING] — fix: give --plan PLAN');
    // As people run it: `keystone doctor --repo PATH` exits 1 with that line.
    let stdout = '';
    const io: CliIo = {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: () => true },
      cwd: s.dir,
      env: process.env,
      now: Date.now,
    };
    const code = await main(
      ['doctor', '--repo', repo.dir, '--allow-unsigned', '--status', 'none', '--state-dir', join(s.dir, 'cli-state')],
      io,
      { once: () => undefined },
    );
    expect(code, stdout).toBe(1);
    expect(stdout).toMatch(
      /^✗ first-revision +commit [0-9a-f]{12} \(the tip of main\) has no fleet\.toml .*\[KS_FLEET_MISSING\] — fix: give --plan PLAN/m,
    );
  });

  it('fails when no target of fleet.toml takes the device, naming the targets', async () => {
    writeFileSync(
      join(repo.dir, 'fleet.toml'),
      '[[targets]]\nname = "pis"\nselector = { hw = "pi4" }\nplan = "plans/edge-processes.toml"\n',
    );
    repo.commit('fleet: pi4 only');
    try {
      const r = await first(gitSetup({ device: 'edge-7', labels: { hw: 'x86' } }));
      expect(r).toMatchObject({ status: 'fail', code: 'KS_FLEET_NO_TARGET' });
      expect(r.detail).toMatch(
        /^no target of fleet\.toml in commit [0-9a-f]{12} \(the tip of main\) takes device edge-7 \(hw=x86\)$/,
      );
      expect(r.fix).toMatch(
        /^give --device NAME or --label KEY=VALUE values a target selects \(targets: pis;.*\), add a target for this device to fleet\.toml, or give --plan PLAN$/,
      );
      // The same fleet with the device's labels matching: it loads.
      expect(await first(gitSetup({ device: 'edge-7', labels: { hw: 'pi4' } }))).toMatchObject({
        status: 'pass',
        detail: expect.stringMatching(
          /loads for device edge-7: plans\/edge-processes\.toml \(fleet\.toml target pis\), 4 components$/,
        ),
      });
    } finally {
      rmSync(join(repo.dir, 'fleet.toml'));
      repo.commit('fleet: gone again');
    }
  });

  it('fails a --plan that does not exist, listing the plans there', async () => {
    const r = await first(gitSetup({ planFile: 'plans/edge-procesess.toml' }));
    expect(r).toMatchObject({ status: 'fail', code: 'KS_FILE_NOT_FOUND' });
    expect(r.detail).toMatch(
      /^--plan plans\/edge-procesess\.toml does not exist in commit [0-9a-f]{12} \(the tip of main\)$/,
    );
    expect(r.fix).toBe(
      `give --plan one of the repository's plans (its plans: ${PLANS}), or leave --plan out to take the plan from fleet.toml`,
    );
  });

  it('passes when the tip loads for the device', async () => {
    const r = await first(gitSetup({ planFile: 'plans/edge-processes.toml' }));
    expect(r.status).toBe('pass');
    expect(r.detail).toMatch(
      /^commit [0-9a-f]{12} \(the tip of main\) loads for device doctor-test: plans\/edge-processes\.toml \(--plan\), 4 components$/,
    );
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
    expect(r.detail).toMatch(
      new RegExp(
        `^the agent would refuse the next revision and keep running ${old.slice(0, 12)}: .*\\[KS_FLEET_MISSING\\]$`,
      ),
    );
    expect(r.fix).toMatch(/^give --plan PLAN/);
    // The tip is the commit applied last: the plan line says it.
    const at = gitSetup();
    stateWithApplied(at.stateDir, {
      id: repo.git('rev-parse', 'HEAD'),
      source: `git ${repo.dir} main`,
      planFile: 'plans/edge-processes.toml',
    });
    expect((await first(at)).status).toBe('skip');
  });

  it('a remote repository is not fetched: skipped, saying why', async () => {
    const r = await first(
      gitSetup({
        source: { kind: 'git', repo: 'https://git.example.invalid/fleet.git', ref: 'main', gitNotes: false },
      }),
    );
    expect(r.status).toBe('skip');
    expect(r.detail).toBe(
      'not read: doctor does not fetch from https://git.example.invalid/fleet.git (it writes no Git cache), so the tip of main is first read by the agent; in a checkout of it, keystonectl apply-dry --fleet shows what each target would run',
    );
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
    expect(byId(missing, 'plan')).toMatchObject({
      status: 'fail',
      code: 'KS_FILE_NOT_FOUND',
      detail: `--plan plans/nope.toml does not exist in directory ${dir}`,
    });
  });
});

describe('first-revision: the signature, verified as the agent verifies it', () => {
  const signedSetup = (over: Partial<DoctorSetup> = {}): DoctorSetup =>
    setup({
      stateDir: join(s.dir, `state-${++n}`),
      source: { kind: 'git', repo: signed.dir, ref: 'main', gitNotes: false },
      planFile: 'plans/edge-processes.toml',
      ...trusting([trustedKey()]),
      ...over,
    });

  it('fails an unsigned tip on a device with --trusted-key: KS_UNSIGNED, and how to sign it', async () => {
    const r = await first(gitSetup({ planFile: 'plans/edge-processes.toml', ...trusting([trustedKey()]) }));
    expect(r).toMatchObject({ status: 'fail', code: 'KS_UNSIGNED' });
    expect(r.detail).toMatch(
      /^commit [0-9a-f]{12} \(the tip of main\) is refused for its signature: the revision is not signed: SHA256SUMS\.minisig is missing/,
    );
    expect(r.fix).toBe(
      'sign it: keystonectl sign --key KEY --ref main in a checkout of main, then commit and push (docs/signing.md); or, for development only, --allow-unsigned',
    );
    // The same tip with --allow-unsigned: nothing is verified, as in the agent; it loads.
    expect(await first(gitSetup({ planFile: 'plans/edge-processes.toml' }))).toMatchObject({ status: 'pass' });
  });

  it('passes a tip signed by a trusted key, naming the signer', async () => {
    const r = await first(signedSetup());
    expect(r.status, r.detail).toBe('pass');
    expect(r.detail).toMatch(
      /^commit [0-9a-f]{12} \(the tip of main\), signed by [0-9A-F]+ at \S+Z, loads for device doctor-test: plans\/edge-processes\.toml \(--plan\), 4 components$/,
    );
  });

  it('fails a tip signed only by a key the device does not trust: KS_UNTRUSTED_KEY', async () => {
    const r = await first(signedSetup(trusting([otherKey])));
    expect(r).toMatchObject({ status: 'fail', code: 'KS_UNTRUSTED_KEY' });
    expect(r.detail).toMatch(
      /is refused for its signature: SHA256SUMS\.minisig is signed only by untrusted key [0-9A-F]+ \(trusted: [0-9A-F]+\)$/,
    );
    expect(r.fix).toMatch(/^the key is not trusted: give its public key with --trusted-key FILE/);
  });

  it('fails a tip older than --max-age (KS_SIGNATURE_TOO_OLD), judged by the device clock', async () => {
    // example-repo signs a day in the past.
    const r = await first(signedSetup(trusting([trustedKey()], { 'max-age': '1h' })));
    expect(r).toMatchObject({ status: 'fail', code: 'KS_SIGNATURE_TOO_OLD' });
    expect(r.fix).toMatch(
      /^sign it again: keystonectl sign --key KEY --ref main .*; or give --max-age a longer duration/,
    );
    expect((await first(signedSetup(trusting([trustedKey()], { 'max-age': '720h' })))).status).toBe('pass');
    // A clock three days behind sees a signature from the future.
    expect(await first(signedSetup(), Date.now() - 3 * 86_400_000)).toMatchObject({
      status: 'fail',
      code: 'KS_SIGNATURE_FROM_FUTURE',
    });
  });

  it('fails a tip signed earlier than what the device applied last (the replay floor), and only warns a device that runs it', async () => {
    const st = signedSetup();
    stateWithApplied(st.stateDir, {
      id: '0'.repeat(40),
      source: `git ${signed.dir} main`,
      signedAt: Math.floor(Date.now() / 1000) - 60,
    });
    const r = await first(st);
    expect(r.status).toBe('warn');
    expect(r.detail).toMatch(
      /^the agent would refuse the next revision and keep running 000000000000: .* is refused for its signature: signed at .*, earlier than the revision applied last .*\[KS_SIGNATURE_REPLAYED\]$/,
    );
  });

  it('fails a plan added after signing: the agent loads only what the signature covers (KS_FILE_NOT_SIGNED)', async () => {
    cpSync(join(signed.dir, 'plans', 'edge-processes.toml'), join(signed.dir, 'plans', 'extra.toml'));
    signed.commit('a plan nobody signed');
    try {
      const r = await first(signedSetup({ planFile: 'plans/extra.toml' }));
      expect(r).toMatchObject({ status: 'fail', code: 'KS_FILE_NOT_SIGNED' });
      expect(r.fix).toMatch(/^a file changed after signing: review the change and sign again/);
    } finally {
      rmSync(join(signed.dir, 'plans', 'extra.toml'));
      signed.commit('gone again');
    }
  });

  it('--dir: the directory is verified too (unsigned: KS_UNSIGNED, signed: passes)', async () => {
    const dirSetup = (root: string) =>
      setup({
        stateDir: join(s.dir, `state-${++n}`),
        source: { kind: 'dir', root },
        planFile: 'plans/edge-processes.toml',
        ...trusting([trustedKey()]),
      });
    const unsigned = await first(dirSetup(repo.dir));
    expect(unsigned).toMatchObject({ status: 'fail', code: 'KS_UNSIGNED' });
    expect(unsigned.fix).toBe(
      `sign it: keystonectl sign --key KEY --repo ${repo.dir} (docs/signing.md); or, for development only, --allow-unsigned`,
    );
    const ok = await first(dirSetup(signed.dir));
    expect(ok.status, ok.detail).toBe('pass');
    expect(ok.detail).toMatch(
      new RegExp(`^directory ${signed.dir}: signed by [0-9A-F]+ at \\S+Z; the revision the agent takes first`),
    );
  });

  it('as people run it: `keystone doctor --repo PATH --trusted-key KEY` on an unsigned tip exits 1 with the agent’s code', async () => {
    let stdout = '';
    const io: CliIo = {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: () => true },
      cwd: s.dir,
      env: process.env,
      now: Date.now,
    };
    const args = [
      'doctor',
      '--repo',
      repo.dir,
      '--plan',
      'plans/edge-processes.toml',
      '--status',
      'none',
      '--state-dir',
      join(s.dir, 'cli-signed-state'),
    ];
    const code = await main([...args, '--trusted-key', trustedKey()], io, { once: () => undefined });
    expect(code, stdout).toBe(1);
    expect(stdout).toMatch(
      /^✗ first-revision +commit [0-9a-f]{12} \(the tip of main\) is refused for its signature: .*\[KS_UNSIGNED\] — fix: sign it: keystonectl sign --key KEY/m,
    );
    expect(stdout).toMatch(/^✓ settings /m);
    // The signed repository's tip with its key: ready.
    stdout = '';
    const ready = await main(
      [
        'doctor',
        '--repo',
        signed.dir,
        '--plan',
        'plans/edge-processes.toml',
        '--status',
        'none',
        '--state-dir',
        join(s.dir, 'cli-signed-state-2'),
        '--trusted-key',
        trustedKey(),
      ],
      io,
      { once: () => undefined },
    );
    expect(stdout).toMatch(/^✓ first-revision +commit [0-9a-f]{12} \(the tip of main\), signed by /m);
    expect(ready, stdout).toBe(0);
  });
});

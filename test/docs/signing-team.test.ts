// docs/signing.md "Signing in a team", held to its workflow (examples/signing/sign-on-merge.yml): the workflow's own
// shell steps run under bash, through bin/keystonectl.js (run `npm run build` first), against a real bare "origin"
// and two pull requests cut from the same main. Each pull request's dry run passes unsigned; both merge without a
// conflict (neither touches SHA256SUMS); the signing step signs main after each merge, and a device's check of main
// (keystonectl verify with the release key, for main) passes, while an author's own key is not trusted. A pull request
// that changes SHA256SUMS is stopped by its dry run.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';

const WORKFLOW = readFileSync(join(PROJECT_ROOT, 'examples/signing/sign-on-merge.yml'), 'utf8');
const DOC = readFileSync(join(PROJECT_ROOT, 'docs/signing.md'), 'utf8');
const CTL = join(PROJECT_ROOT, 'bin', 'keystonectl.js');

/** The `run: |` block of the step named `name`, dedented (the file's own layout: steps cut out by indentation). */
function runOf(name: string): string {
  const lines = WORKFLOW.split('\n');
  const at = lines.findIndex((l) => l.trim() === `- name: ${name}`);
  if (at < 0) throw new Error(`no step "${name}" in the workflow`);
  const stepIndent = lines[at]!.indexOf('-');
  const rest = lines.slice(at + 1);
  const end = rest.findIndex((l) => l.trim() !== '' && l.search(/\S/) <= stepIndent);
  const step = end < 0 ? rest : rest.slice(0, end);
  const r = step.findIndex((l) => /^\s*run: \|$/.test(l));
  if (r < 0) throw new Error(`step "${name}" has no run block`);
  const indent = step[r]!.search(/\S/);
  const body: string[] = [];
  for (const l of step.slice(r + 1)) {
    if (l.trim() !== '' && l.search(/\S/) <= indent) break;
    body.push(l);
  }
  const cut = Math.min(...body.filter((l) => l.trim()).map((l) => l.search(/\S/)));
  return body.map((l) => l.slice(cut)).join('\n');
}

/** The workflow-level env: the defaults the steps see. */
const WORKFLOW_ENV = { KEYSTONE_FLEET_BRANCH: /KEYSTONE_FLEET_BRANCH: (\S+)/.exec(WORKFLOW)![1]! };

let example: ExampleRepo;
let root: string;
let bin: string;
let origin: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=dev', '-c', 'user.email=dev@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8' }).trim();
const ctl = (cwd: string, ...args: string[]) => spawnSync(process.execPath, [CTL, ...args], { cwd, encoding: 'utf8' });

/** A step's script under bash, as a runner would run it: keystonectl on the PATH, RUNNER_TEMP and the summary. */
function runStep(name: string, cwd: string, env: Record<string, string>) {
  const temp = mkdtempSync(join(root, 'runner-'));
  const summary = join(temp, 'summary.md');
  writeFileSync(summary, '');
  const r = spawnSync('bash', ['-c', runOf(name)], {
    cwd,
    encoding: 'utf8',
    env: { PATH: `${bin}:${process.env.PATH}`, HOME: process.env.HOME ?? root, RUNNER_TEMP: temp, GITHUB_STEP_SUMMARY: summary, ...WORKFLOW_ENV, ...env },
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, summary: readFileSync(summary, 'utf8') };
}

/** A clone of origin at `branch`, as actions/checkout leaves it (fetch-depth 0: every branch as origin/…). */
function clone(branch: string): string {
  const dir = mkdtempSync(join(root, 'clone-'));
  git(root, 'clone', '-q', '-b', branch, origin, dir);
  return dir;
}

let release: { key: string; pub: string };
let author: { pub: string };
beforeAll(async () => {
  example = await exampleRepo({ signed: false });
  root = mkdtempSync(join(tmpdir(), 'keystone-team-'));
  bin = join(root, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'keystonectl'), `#!/bin/sh\nexec "${process.execPath}" "${CTL}" "$@"\n`, { mode: 0o755 });
  origin = join(root, 'origin.git');
  git(root, 'init', '-q', '--bare', '-b', 'main', origin);
  git(example.dir, 'push', '-q', origin, 'main');
  for (const who of ['release', 'author']) {
    const r = ctl(root, 'keygen', '--out', join(root, who), '--no-password');
    if (r.status !== 0) throw new Error(r.stderr);
  }
  release = { key: join(root, 'release.key'), pub: join(root, 'release.pub') };
  author = { pub: join(root, 'author.pub') };
  // main as it starts: signed once by the release key (the first run of the job, or by hand).
  const first = runStep('Sign main for the fleet', clone('main'), { KEYSTONE_RELEASE_KEY: readFileSync(release.key, 'utf8'), KEYSTONE_TRUSTED_KEY: readFileSync(release.pub, 'utf8') });
  if (first.code !== 0) throw new Error(first.stdout + first.stderr);
}, 120_000);
afterAll(() => {
  example?.cleanup();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A pull request: a branch off main with one recipe edited, pushed to origin, unsigned. */
function pullRequest(branch: string, file: string, from: RegExp, to: string): string {
  const dir = clone('main');
  git(dir, 'checkout', '-q', '-b', branch);
  const p = join(dir, file);
  writeFileSync(p, readFileSync(p, 'utf8').replace(from, to));
  git(dir, 'commit', '-qam', `${branch}`);
  git(dir, 'push', '-q', 'origin', branch);
  return dir;
}

/** The merge button: main gets the branch as a merge commit. */
function merge(branch: string): void {
  const dir = clone('main');
  git(dir, 'merge', '-q', '--no-ff', '-m', `Merge ${branch}`, `origin/${branch}`);
  git(dir, 'push', '-q', 'origin', 'main');
}

const signEnv = () => ({ KEYSTONE_RELEASE_KEY: readFileSync(release.key, 'utf8'), KEYSTONE_TRUSTED_KEY: readFileSync(release.pub, 'utf8') });

describe('signing in a team: unsigned pull requests, signed on merge by the release key', () => {
  it('the doc has the section, names the workflow, and says what a device trusts', () => {
    expect(DOC).toContain('## Signing in a team');
    expect(DOC).toContain('examples/signing/sign-on-merge.yml');
    expect(DOC).toMatch(/trusts? the release key/);
  });

  it('two pull requests each dry-run unsigned, merge without a conflict, and main is signed after each merge', { timeout: 180_000 }, async () => {
    const a = pullRequest('api-1.5', 'recipes/com.acme.api.toml', /^version = "1\.4\.0"/m, 'version = "1.5.0"');
    const b = pullRequest('telemetry-1.30', 'recipes/com.acme.telemetry.toml', /^version = "1\.29\.0"/m, 'version = "1.30.0"');
    for (const [dir, changed] of [[a, 'api'], [b, 'telemetry']] as const) {
      const dry = runStep('Dry run, unsigned', dir, { BASE_REF: 'main' });
      expect(dry.code, dry.stdout + dry.stderr).toBe(0);
      expect(dry.summary).toContain('UNSIGNED');
      expect(dry.summary).toMatch(new RegExp(`\\| \`${changed}\` \\| restart \\|`));
      // Neither pull request is signed, nor touches the signature files.
      expect(git(dir, 'diff', '--name-only', 'origin/main...HEAD')).not.toMatch(/SHA256SUMS/);
    }

    merge('api-1.5');
    const first = runStep('Sign main for the fleet', clone('main'), signEnv());
    expect(first.code, first.stdout + first.stderr).toBe(0);
    // The second pull request was cut before that signature: it still merges cleanly.
    merge('telemetry-1.30');
    const second = runStep('Sign main for the fleet', clone('main'), signEnv());
    expect(second.code, second.stdout + second.stderr).toBe(0);

    // What a device following main checks: the release key, for main; both changes are in the signed tree.
    const device = clone('main');
    expect(git(device, 'log', '-1', '--format=%s')).toMatch(/^sign [0-9a-f]+ for main$/);
    const ok = ctl(device, 'verify', '--trusted-key', release.pub, '--ref', 'main', '--require-ref');
    expect(ok.status, ok.stderr).toBe(0);
    expect(readFileSync(join(device, 'recipes/com.acme.api.toml'), 'utf8')).toMatch(/^version = "1\.5\.0"/m);
    expect(readFileSync(join(device, 'recipes/com.acme.telemetry.toml'), 'utf8')).toMatch(/^version = "1\.30\.0"/m);
    // An author's own key is no key of the fleet's.
    const theirs = ctl(device, 'verify', '--trusted-key', author.pub, '--ref', 'main');
    expect(theirs.status).toBe(2);
    expect(theirs.stderr).toContain('KS_UNTRUSTED_KEY');

    // Run again with nothing merged since: nothing to sign, nothing pushed.
    const head = git(device, 'rev-parse', 'HEAD');
    const again = runStep('Sign main for the fleet', clone('main'), signEnv());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('is signed already');
    expect(git(clone('main'), 'rev-parse', 'HEAD')).toBe(head);
  });

  it('a pull request that changes SHA256SUMS is stopped by its dry run', () => {
    const dir = pullRequest('resign', 'SHA256SUMS', /^/, '0000000000000000000000000000000000000000000000000000000000000000  recipes/extra.toml\n');
    const dry = runStep('Dry run, unsigned', dir, { BASE_REF: 'main' });
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain('::error::this pull request changes SHA256SUMS');
  });
});

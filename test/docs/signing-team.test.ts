// docs/signing.md "Signing in a team", held to its workflows (examples/signing/sign-on-merge.yml and
// dry-run-unsigned.yml): the workflows' own shell steps run under bash, through bin/keystonectl.js (run `npm run build`
// first), against a real bare "origin" and pull requests cut from the same main. Each pull request's dry run passes
// unsigned; both merge without a conflict (neither touches SHA256SUMS); after each merge the signing step signs
// exactly the pushed commit onto `fleet` (never main), and a device's check of fleet (keystonectl verify with the
// release key, for fleet) passes, while an author's own key is not trusted. The signing step refuses a commit main has
// moved past and one off main's first-parent history, and leaves no key file behind when it fails. The install step
// installs nothing whose sha256 is not the pinned one, and fails when keystonectl is missing after it. The workflow
// files themselves are checked line by line (no YAML parser among the devDependencies): the signing workflow has no
// pull_request trigger, only its signing job enters the `release` environment, and nothing installs `keystone` from npm.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleRepo, PROJECT_ROOT, type ExampleRepo } from '../support/example-repo.js';

const SIGN_WORKFLOW = readFileSync(join(PROJECT_ROOT, 'examples/signing/sign-on-merge.yml'), 'utf8');
const DRY_WORKFLOW = readFileSync(join(PROJECT_ROOT, 'examples/signing/dry-run-unsigned.yml'), 'utf8');
const DOC = readFileSync(join(PROJECT_ROOT, 'docs/signing.md'), 'utf8');
const CTL = join(PROJECT_ROOT, 'bin', 'keystonectl.js');
const SIGN_STEP = 'Sign the merged commit for the fleet branch';
const DRY_STEP = 'Dry run, unsigned';
const INSTALL_STEP = 'Install keystonectl';

/** The workflow's lines without whole-line comments: what GitHub reads. */
const codeLines = (workflow: string) => workflow.split('\n').filter((l) => !/^\s*#/.test(l));
const indentOf = (l: string) => l.search(/\S/);

/** The lines under `key:` at `indent` (a top-level key, or a job under jobs:), up to the next sibling. */
function blockOf(workflow: string, key: string, indent: number): string[] {
  const lines = codeLines(workflow);
  const at = lines.findIndex((l) => indentOf(l) === indent && l.trimEnd() === `${' '.repeat(indent)}${key}:`);
  if (at < 0) throw new Error(`no "${key}:" at indent ${indent}`);
  const rest = lines.slice(at + 1);
  const end = rest.findIndex((l) => l.trim() !== '' && indentOf(l) <= indent);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The job names under jobs:. */
const jobsOf = (workflow: string) =>
  blockOf(workflow, 'jobs', 0)
    .filter((l) => indentOf(l) === 2 && /^\s*[\w-]+:\s*$/.test(l))
    .map((l) => l.trim().slice(0, -1));

/** The `run: |` block of the step named `name`, dedented (the file's own layout: steps cut out by indentation). */
function runOf(workflow: string, name: string): string {
  const lines = workflow.split('\n');
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

/** The signing workflow's env: the defaults the steps see. */
const WORKFLOW_ENV = { KEYSTONE_FLEET_BRANCH: /^\s*KEYSTONE_FLEET_BRANCH: (\S+)/m.exec(SIGN_WORKFLOW)![1]! };

let example: ExampleRepo;
let root: string;
let bin: string;
let origin: string;
let gitconfig: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync(
    'git',
    ['-c', 'user.name=dev', '-c', 'user.email=dev@example.invalid', '-c', 'commit.gpgsign=false', ...args],
    { cwd, encoding: 'utf8' },
  ).trim();
const ctl = (cwd: string, ...args: string[]) => spawnSync(process.execPath, [CTL, ...args], { cwd, encoding: 'utf8' });

/** A step's script under bash, as a runner would run it: keystonectl on the PATH, RUNNER_TEMP and the summary. */
function runStep(
  workflow: string,
  name: string,
  cwd: string,
  env: Record<string, string>,
  path = `${bin}:${process.env.PATH}`,
) {
  const temp = mkdtempSync(join(root, 'runner-'));
  const summary = join(temp, 'summary.md');
  writeFileSync(summary, '');
  const r = spawnSync('bash', ['-c', runOf(workflow, name)], {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: path,
      HOME: root,
      GIT_CONFIG_GLOBAL: gitconfig,
      GIT_CONFIG_NOSYSTEM: '1',
      RUNNER_TEMP: temp,
      GITHUB_STEP_SUMMARY: summary,
      ...WORKFLOW_ENV,
      ...env,
    },
    timeout: 120_000,
  });
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    summary: readFileSync(summary, 'utf8'),
    temp,
    out: `${r.stdout}\n${r.stderr}`,
  };
}

/** A clone of origin at `branch`, as actions/checkout leaves it (fetch-depth 0: every branch as origin/…). */
function clone(branch: string): string {
  const dir = mkdtempSync(join(root, 'clone-'));
  git(root, 'clone', '-q', '-b', branch, origin, dir);
  return dir;
}

/** A branch's tip in origin, or '' when there is none. */
function tipOf(branch: string): string {
  const r = spawnSync('git', ['rev-parse', '-q', '--verify', `refs/heads/${branch}`], {
    cwd: origin,
    encoding: 'utf8',
  });
  return r.status === 0 ? r.stdout.trim() : '';
}

let release: { key: string; pub: string };
let author: { pub: string };
const signEnv = (sha: string, key = readFileSync(release.key, 'utf8')) => ({
  SIGN_SHA: sha,
  KEYSTONE_RELEASE_KEY: key,
  KEYSTONE_TRUSTED_KEY: readFileSync(release.pub, 'utf8'),
});
/** The signing step for the commit a push to main brought. */
const signFor = (sha: string, key?: string) => runStep(SIGN_WORKFLOW, SIGN_STEP, clone('main'), signEnv(sha, key));

beforeAll(async () => {
  example = await exampleRepo({ signed: false });
  root = mkdtempSync(join(tmpdir(), 'keystone-team-'));
  gitconfig = join(root, 'gitconfig');
  writeFileSync(gitconfig, '');
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
  // The job's first run (the push of main as it starts): it makes fleet, one signing commit on top of main.
  const start = tipOf('main');
  const first = signFor(start);
  if (first.code !== 0) throw new Error(first.out);
  if (git(origin, 'log', '-1', '--format=%P', 'fleet') !== start)
    throw new Error('the first fleet commit is not on top of main');
}, 120_000);
afterAll(() => {
  example?.cleanup();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A pull request: a branch off main with one file edited, pushed to origin, unsigned. */
function pullRequest(branch: string, file: string, from: RegExp, to: string): string {
  const dir = clone('main');
  git(dir, 'checkout', '-q', '-b', branch);
  const p = join(dir, file);
  writeFileSync(p, readFileSync(p, 'utf8').replace(from, to));
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', `${branch}`);
  git(dir, 'push', '-q', 'origin', branch);
  return dir;
}

/** The merge button: main gets the branch as a merge commit; returns main's new tip (the push's github.sha). */
function merge(branch: string): string {
  const dir = clone('main');
  git(dir, 'merge', '-q', '--no-ff', '-m', `Merge ${branch}`, `origin/${branch}`);
  git(dir, 'push', '-q', 'origin', 'main');
  return git(dir, 'rev-parse', 'HEAD');
}

/** Another change reaching main (a merge the job's run has not seen yet); returns main's new tip. */
function pushToMain(file: string, from: RegExp, to: string): string {
  const dir = clone('main');
  const p = join(dir, file);
  writeFileSync(p, readFileSync(p, 'utf8').replace(from, to));
  git(dir, 'commit', '-qam', `edit ${file}`);
  git(dir, 'push', '-q', 'origin', 'main');
  return git(dir, 'rev-parse', 'HEAD');
}

const keyFilesIn = (temp: string) => readdirSync(temp).filter((f) => f.startsWith('release.'));

describe('signing in a team: the workflow files', () => {
  it('the signing workflow runs on pushes to main only: no pull_request or pull_request_target trigger', () => {
    const on = blockOf(SIGN_WORKFLOW, 'on', 0)
      .map((l) => l.trim())
      .filter(Boolean);
    expect(on).toEqual(['push:', 'branches: [main]']);
    expect(codeLines(SIGN_WORKFLOW).join('\n')).not.toMatch(/pull_request/);
    // The dry run is the pull-request half, and holds nothing worth taking.
    expect(blockOf(DRY_WORKFLOW, 'on', 0).map((l) => l.trim())).toContain('pull_request:');
  });

  it('only the signing job enters the release environment, and only it names a secret', () => {
    expect(jobsOf(SIGN_WORKFLOW)).toEqual(['sign']);
    const job = blockOf(SIGN_WORKFLOW, 'sign', 2);
    expect(job).toContain('    environment: release');
    expect(job.filter((l) => /^\s*environment:/.test(l))).toHaveLength(1);
    const all = codeLines(SIGN_WORKFLOW);
    expect(all.filter((l) => l.includes('secrets.')).every((l) => job.includes(l))).toBe(true);
    expect(all.filter((l) => l.includes('secrets.'))).toHaveLength(3);
    // The job reads main; it writes fleet with the deploy key, never with GITHUB_TOKEN.
    expect(job.map((l) => l.trim())).toContain('contents: read');
    expect(all.join('\n')).not.toMatch(/contents: write/);
    // The pull-request workflow names no environment and no secret.
    expect(codeLines(DRY_WORKFLOW).join('\n')).not.toMatch(/environment:|secrets\./);
  });

  it('the job signs the commit that was pushed, with no secret on the runner while npm runs', () => {
    const job = blockOf(SIGN_WORKFLOW, 'sign', 2).map((l) => l.trim());
    expect(job).toContain('SIGN_SHA: ${{ github.sha }}');
    expect(job).toContain('ref: ${{ github.sha }}');
    const install = job.indexOf(`- name: ${INSTALL_STEP}`);
    const firstSecret = job.findIndex((l) => l.includes('secrets.'));
    expect(install).toBeGreaterThan(-1);
    expect(install).toBeLessThan(firstSecret);
    expect(WORKFLOW_ENV.KEYSTONE_FLEET_BRANCH).toBe('fleet');
    // No push to main anywhere in the signing script.
    expect(runOf(SIGN_WORKFLOW, SIGN_STEP)).not.toMatch(/git push[^\n]*\bmain\b/);
    expect(runOf(SIGN_WORKFLOW, SIGN_STEP)).toContain(`trap 'rm -f "$key" "$pub"' EXIT`);
  });

  it('nothing installs `keystone` from npm: a pinned tarball, checked, installed without scripts', () => {
    for (const workflow of [SIGN_WORKFLOW, DRY_WORKFLOW]) {
      const code = codeLines(workflow).join('\n');
      expect(code).not.toMatch(/npm\s+(install|i|add)\b[^\n]*\bkeystone\b(?![-.])/);
      expect(code).not.toMatch(/KEYSTONE_PACKAGE/);
      expect(blockOf(workflow, 'env', 0).map((l) => l.trim().split(':')[0])).toEqual(
        expect.arrayContaining(['KEYSTONE_TARBALL_URL', 'KEYSTONE_TARBALL_SHA256']),
      );
      const install = runOf(workflow, INSTALL_STEP);
      expect(install).toContain('sha256sum -c');
      expect(install).toContain('npm install --ignore-scripts --global ./keystone-edge.tgz');
      expect(install).toContain('command -v keystonectl');
    }
  });

  it('the doc has the section, names the workflows, and says what a device trusts and follows', () => {
    expect(DOC).toContain('## Signing in a team');
    expect(DOC).toContain('examples/signing/sign-on-merge.yml');
    expect(DOC).toContain('examples/signing/dry-run-unsigned.yml');
    expect(DOC).toMatch(/trusts? the release key/);
    expect(DOC).toContain('--ref fleet');
    const flat = DOC.replace(/\s+/g, ' ');
    expect(flat).toContain('**Settings → Environments → New environment** `release`');
    expect(flat).toContain('Deployment branches and tags');
    expect(flat).toContain('CODEOWNERS');
    expect(flat).toContain('**required status check**');
    expect(DOC).not.toMatch(/allow GitHub Actions to bypass/i);
  });
});

describe('signing in a team: unsigned pull requests, signed onto fleet on merge by the release key', () => {
  it(
    'two pull requests each dry-run unsigned, merge without a conflict, and each merge is signed onto fleet',
    { timeout: 180_000 },
    () => {
      const a = pullRequest('api-1.5', 'recipes/com.acme.api.toml', /^version = "1\.4\.0"/m, 'version = "1.5.0"');
      const b = pullRequest(
        'telemetry-1.30',
        'recipes/com.acme.telemetry.toml',
        /^version = "1\.29\.0"/m,
        'version = "1.30.0"',
      );
      for (const [dir, changed] of [
        [a, 'api'],
        [b, 'telemetry'],
      ] as const) {
        const dry = runStep(DRY_WORKFLOW, DRY_STEP, dir, { BASE_REF: 'main' });
        expect(dry.code, dry.out).toBe(0);
        expect(dry.summary).toContain('UNSIGNED');
        expect(dry.summary).toMatch(new RegExp(`\\| \`${changed}\` \\| restart \\|`));
        // Neither pull request is signed, nor touches the signature files.
        expect(git(dir, 'diff', '--name-only', 'origin/main...HEAD')).not.toMatch(/SHA256SUMS/);
      }

      const fleet0 = tipOf('fleet');
      const mainA = merge('api-1.5');
      const first = signFor(mainA);
      expect(first.code, first.out).toBe(0);
      const fleet1 = tipOf('fleet');
      // fleet moved forward by one signing commit: the previous fleet tip and the merged commit as its parents.
      expect(git(origin, 'log', '-1', '--format=%P', fleet1).split(' ')).toEqual([fleet0, mainA]);
      // main is not written: its tip is still the merge, and it carries no signature.
      expect(tipOf('main')).toBe(mainA);
      expect(git(origin, 'ls-tree', '--name-only', 'main')).not.toMatch(/SHA256SUMS/);
      expect(keyFilesIn(first.temp)).toEqual([]);

      // The second pull request was cut before that signature: it still merges cleanly.
      const mainB = merge('telemetry-1.30');
      const second = signFor(mainB);
      expect(second.code, second.out).toBe(0);
      const fleet2 = tipOf('fleet');
      expect(git(origin, 'log', '-1', '--format=%P', fleet2).split(' ')).toEqual([fleet1, mainB]);
      expect(tipOf('main')).toBe(mainB);

      // What a device following fleet checks: the release key, for fleet; both changes are in the signed tree, and
      // fleet only moved forward (the agent refuses a rewritten branch).
      const device = clone('fleet');
      expect(git(device, 'log', '-1', '--format=%s')).toBe(`sign ${mainB.slice(0, 12)} for fleet`);
      expect(spawnSync('git', ['merge-base', '--is-ancestor', fleet0, fleet2], { cwd: device }).status).toBe(0);
      const ok = ctl(device, 'verify', '--trusted-key', release.pub, '--ref', 'fleet', '--require-ref');
      expect(ok.status, ok.stderr).toBe(0);
      expect(readFileSync(join(device, 'recipes/com.acme.api.toml'), 'utf8')).toMatch(/^version = "1\.5\.0"/m);
      expect(readFileSync(join(device, 'recipes/com.acme.telemetry.toml'), 'utf8')).toMatch(/^version = "1\.30\.0"/m);
      // The set is bound to fleet: read as main, it is refused.
      const asMain = ctl(device, 'verify', '--trusted-key', release.pub, '--ref', 'main');
      expect(asMain.status).toBe(2);
      expect(asMain.stderr).toContain('KS_SIGNATURE_WRONG_REF');
      // An author's own key is no key of the fleet's.
      const theirs = ctl(device, 'verify', '--trusted-key', author.pub, '--ref', 'fleet');
      expect(theirs.status).toBe(2);
      expect(theirs.stderr).toContain('KS_UNTRUSTED_KEY');

      // The same push's run again (a re-run): nothing to sign, nothing pushed.
      const again = signFor(mainB);
      expect(again.code, again.out).toBe(0);
      expect(again.stdout).toContain('already carries');
      expect(tipOf('fleet')).toBe(fleet2);
    },
  );

  it(
    'refuses to sign when main has moved past the commit the run was started for; the newer push signs',
    { timeout: 120_000 },
    () => {
      pullRequest('web-port', 'recipes/com.acme.web.toml', /^version = "([^"]+)"/m, 'version = "9.9.9"');
      const started = merge('web-port');
      // Another merge lands before this run's signing step.
      const newer = pushToMain('recipes/com.acme.api.toml', /^version = "1\.5\.0"/m, 'version = "1.5.1"');
      const fleetBefore = tipOf('fleet');

      const late = signFor(started);
      expect(late.code, late.out).toBe(0);
      expect(late.stdout).toContain(`::warning::main has moved past ${started.slice(0, 12)}`);
      expect(late.stdout).not.toMatch(/^signed /m);
      expect(tipOf('fleet')).toBe(fleetBefore);
      expect(keyFilesIn(late.temp)).toEqual([]);

      // The run for the newer push signs it, and with it the earlier merge.
      const current = signFor(newer);
      expect(current.code, current.out).toBe(0);
      expect(git(origin, 'log', '-1', '--format=%P', 'fleet').split(' ')).toEqual([fleetBefore, newer]);
      expect(tipOf('main')).toBe(newer);
    },
  );

  it(
    "refuses a commit that is not on main's first-parent history (a branch commit, merged or not)",
    { timeout: 120_000 },
    () => {
      const fleetBefore = tipOf('fleet');
      const merged = git(origin, 'rev-parse', 'refs/heads/api-1.5'); // reached main only as a merge's second parent
      pullRequest('unmerged', 'recipes/com.acme.api.toml', /^version = "[^"]+"/m, 'version = "6.6.6"');
      const unmerged = git(origin, 'rev-parse', 'refs/heads/unmerged');
      for (const sha of [merged, unmerged]) {
        const r = signFor(sha);
        expect(r.code, r.out).toBe(1);
        expect(r.stdout).toContain(`::error::${sha} is not on main's first-parent history: not signed`);
        expect(tipOf('fleet')).toBe(fleetBefore);
        expect(keyFilesIn(r.temp)).toEqual([]);
      }
    },
  );

  it(
    'removes the key file whatever fails: a refused fleet push, a key that does not load',
    { timeout: 120_000 },
    () => {
      const fleetBefore = tipOf('fleet');
      const sha = pushToMain('recipes/com.acme.api.toml', /^version = "1\.5\.1"/m, 'version = "1.5.2"');
      // fleet's ruleset: only the deploy key may move it. Here nobody may: the push fails after the key was used.
      const hook = join(origin, 'hooks', 'pre-receive');
      writeFileSync(
        hook,
        '#!/bin/sh\nwhile read old new ref; do [ "$ref" = refs/heads/fleet ] && { echo "fleet: refused by its ruleset" >&2; exit 1; }; done\nexit 0\n',
      );
      chmodSync(hook, 0o755);
      try {
        const refused = signFor(sha);
        expect(refused.code, refused.out).toBe(1);
        expect(refused.stdout).toMatch(/^signed \d+ files with key/m);
        expect(refused.stdout).toContain('::error::could not push fleet');
        expect(keyFilesIn(refused.temp)).toEqual([]);
        expect(tipOf('fleet')).toBe(fleetBefore);
      } finally {
        rmSync(hook);
      }
      // A release key that does not load: `keystonectl sign` fails, and still no key file is left.
      const broken = signFor(sha, 'untrusted comment: not a key\nAAAA\n');
      expect(broken.code).not.toBe(0);
      expect(keyFilesIn(broken.temp)).toEqual([]);
      expect(tipOf('fleet')).toBe(fleetBefore);
      // With the rule lifted, the same run signs.
      const ok = signFor(sha);
      expect(ok.code, ok.out).toBe(0);
      expect(keyFilesIn(ok.temp)).toEqual([]);
    },
  );

  it('a pull request that changes SHA256SUMS is stopped by its dry run', () => {
    const dir = clone('main');
    git(dir, 'checkout', '-q', '-b', 'resign');
    writeFileSync(
      join(dir, 'SHA256SUMS'),
      '0000000000000000000000000000000000000000000000000000000000000000  recipes/extra.toml\n',
    );
    git(dir, 'add', 'SHA256SUMS');
    git(dir, 'commit', '-qm', 'resign');
    git(dir, 'push', '-q', 'origin', 'resign');
    const dry = runStep(DRY_WORKFLOW, DRY_STEP, dir, { BASE_REF: 'main' });
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain('::error::this pull request changes SHA256SUMS');
  });
});

describe('signing in a team: the install step, with stand-ins for curl and npm', () => {
  const tarball = 'a stand-in for keystone-edge-0.1.0.tgz\n';
  const good = createHash('sha256').update(tarball).digest('hex');

  /** A PATH of stand-ins: curl serves the tarball, npm logs its arguments and (if `installs`) puts keystonectl there. */
  function standIns(installs: boolean) {
    const dir = mkdtempSync(join(root, 'standins-'));
    const log = join(dir, 'calls.log');
    const file = join(dir, 'served.tgz');
    writeFileSync(file, tarball);
    writeFileSync(log, '');
    writeFileSync(
      join(dir, 'curl'),
      `#!/bin/sh\necho "curl $*" >> "${log}"\nout=""\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\ncp "${file}" "$out"\n`,
      { mode: 0o755 },
    );
    const provide = installs
      ? `printf '#!/bin/sh\\necho "keystonectl 0.1.0"\\n' > "${dir}/keystonectl"\nchmod +x "${dir}/keystonectl"\n`
      : '';
    writeFileSync(join(dir, 'npm'), `#!/bin/sh\necho "npm $*" >> "${log}"\n${provide}`, { mode: 0o755 });
    return { path: `${dir}:/usr/bin:/bin`, calls: () => readFileSync(log, 'utf8') };
  }
  const url = 'https://releases.example.invalid/keystone-edge-0.1.0.tgz';

  for (const [label, workflow] of [
    ['sign-on-merge.yml', SIGN_WORKFLOW],
    ['dry-run-unsigned.yml', DRY_WORKFLOW],
  ] as const) {
    it(`${label}: installs the pinned tarball without scripts, after its sha256 checks out`, () => {
      const s = standIns(true);
      const r = runStep(
        workflow,
        INSTALL_STEP,
        root,
        { KEYSTONE_TARBALL_URL: url, KEYSTONE_TARBALL_SHA256: good },
        s.path,
      );
      expect(r.code, r.out).toBe(0);
      expect(r.stdout).toContain('keystonectl 0.1.0');
      expect(s.calls()).toContain(`curl -fsSL --proto =https --tlsv1.2 -o keystone-edge.tgz ${url}`);
      expect(s.calls()).toContain('npm install --ignore-scripts --global ./keystone-edge.tgz');
    });

    it(`${label}: refuses without a pinned https URL and sha256, and installs nothing`, () => {
      for (const env of [
        {},
        { KEYSTONE_TARBALL_URL: url },
        { KEYSTONE_TARBALL_URL: url.replace('https', 'http'), KEYSTONE_TARBALL_SHA256: good },
        { KEYSTONE_TARBALL_URL: url, KEYSTONE_TARBALL_SHA256: 'latest' },
      ]) {
        const s = standIns(true);
        const r = runStep(
          workflow,
          INSTALL_STEP,
          root,
          { KEYSTONE_TARBALL_URL: '', KEYSTONE_TARBALL_SHA256: '', ...env },
          s.path,
        );
        expect(r.code, JSON.stringify(env)).toBe(1);
        expect(r.stdout).toContain('::error::set KEYSTONE_TARBALL_URL');
        expect(s.calls()).toBe('');
      }
    });

    it(`${label}: a tarball with another sha256 is not installed`, () => {
      const s = standIns(true);
      const r = runStep(
        workflow,
        INSTALL_STEP,
        root,
        { KEYSTONE_TARBALL_URL: url, KEYSTONE_TARBALL_SHA256: good.replace(/^./, (c) => (c === '0' ? '1' : '0')) },
        s.path,
      );
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('does not have the sha256');
      expect(s.calls()).not.toMatch(/^npm /m);
    });

    it(`${label}: fails loudly when keystonectl is missing after the install`, () => {
      const s = standIns(false);
      const r = runStep(
        workflow,
        INSTALL_STEP,
        root,
        { KEYSTONE_TARBALL_URL: url, KEYSTONE_TARBALL_SHA256: good },
        s.path,
      );
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('::error::keystonectl is not on the PATH');
      expect(existsSync(join(r.temp, 'keystone-edge.tgz'))).toBe(true);
    });
  }
});

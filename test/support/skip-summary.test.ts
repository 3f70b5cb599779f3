// The fresh-machine contract of `npm test` (issue 17): a suite that needs a missing tool is skipped, the run still
// passes and ends with one line per missing requirement; with KEYSTONE_TEST_STRICT=1 the same skips fail it. Real
// vitest runs on a small fixture (test/support/skip-summary-fixture) with the tools hidden from PATH.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './example-repo.js';
import { findInPath, isStaticElf, missingReason, requirementsInTitle, STRICT_ENV } from './requirement-checks.js';

const VITEST = join(PROJECT_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const FIXTURE = join(PROJECT_ROOT, 'test', 'support', 'skip-summary-fixture');
const CONFIG = join(FIXTURE, 'fixture.config.ts');
const MINISIGN_LINE = 'skipped 2 tests: minisign is not installed (apt-get install minisign)';
const PROMTOOL_LINE = 'skipped 1 test: promtool is not installed (apt-get install prometheus)';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A PATH directory holding only `links` (name → target): every other tool is hidden. */
function pathWith(links: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'ks-skip-path-'));
  dirs.push(dir);
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(dir, name));
  return dir;
}

/**
 * This run's environment without what would make the child think it is a worker of this run (VITEST_*), colour it,
 * or make it strict (CI runs this file under KEYSTONE_TEST_STRICT=1); `extra` decides those.
 */
function childEnv(path: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(
    ([k]) => !/^(VITEST|TEST$|NODE_ENV$|FORCE_COLOR$)/.test(k) && k !== STRICT_ENV,
  );
  return { ...Object.fromEntries(inherited), PATH: path, NO_COLOR: '1', ...extra };
}

/** `vitest run` on the fixture; resolves with its exit code and output (never rejects on a non-zero exit). */
function runFixture(
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): Promise<{ code: number | null; out: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG, ...args], {
      cwd: FIXTURE,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
      out += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, stdout }));
  });
}

describe('a run on a machine without minisign and promtool', { timeout: 60_000 }, () => {
  it('passes (exit 0), runs what it can, and ends with one line per missing tool: how many tests it skipped, and the fix', async () => {
    const r = await runFixture(childEnv(pathWith()));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/Tests\s+1 passed \| 3 skipped \(4\)/);
    const tail = r.out.trimEnd().split('\n').slice(-2);
    expect(tail).toEqual([MINISIGN_LINE, PROMTOOL_LINE]);
  });

  it(`with ${STRICT_ENV}=1 the same skips fail the run (exit 1), with the same summary lines and the reason in each failure`, async () => {
    const r = await runFixture(childEnv(pathWith(), { [STRICT_ENV]: '1' }));
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(MINISIGN_LINE);
    expect(r.out).toContain(PROMTOOL_LINE);
    expect(r.out).toContain('[needs minisign] KEYSTONE_TEST_STRICT=1 forbids skipping');
    expect(r.out).toContain(
      'KEYSTONE_TEST_STRICT=1 and this machine cannot run the suite: minisign is not installed (apt-get install minisign)',
    );
    expect(r.out).toMatch(/Tests\s+2 failed \| 1 passed \| 3 skipped \(6\)/);
  });

  it(`${STRICT_ENV}=1 fails the run without the summary reporter too (a command line --reporter replaces it)`, async () => {
    const r = await runFixture(childEnv(pathWith(), { [STRICT_ENV]: '1' }), ['--reporter=json']);
    expect(r.code, r.out).toBe(1);
    const json = JSON.parse(r.stdout) as {
      numFailedTests: number;
      testResults: Array<{ assertionResults: Array<{ status: string; failureMessages: string[] }> }>;
    };
    expect(json.numFailedTests).toBe(2);
    const failures = json.testResults
      .flatMap((f) => f.assertionResults)
      .filter((a) => a.status === 'failed')
      .flatMap((a) => a.failureMessages);
    expect(failures.join('\n')).toContain('promtool is not installed (apt-get install prometheus)');
    expect(r.out).not.toContain('skipped 2 tests');
  });

  it(".ci/run's command line (its own --reporter list, the summary reporter named again) keeps the summary and the exit", async () => {
    const json = join(pathWith(), 'results.json');
    const reporters = [
      '--reporter=default',
      '--reporter=../skip-summary-reporter.ts',
      '--reporter=json',
      `--outputFile=${json}`,
    ];
    const r = await runFixture(childEnv(pathWith(), { [STRICT_ENV]: '1' }), reporters);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(`${MINISIGN_LINE}\n${PROMTOOL_LINE}\n`);
    expect(JSON.parse(readFileSync(json, 'utf8'))).toMatchObject({
      numPassedTests: 1,
      numFailedTests: 2,
      numPendingTests: 3,
    });
  });

  it('with the tools on PATH nothing is skipped and there is no summary line (detection looks only at PATH)', async () => {
    const present = findInPath('true', { PATH: '/usr/bin:/bin' })!;
    const r = await runFixture(childEnv(pathWith({ minisign: present, promtool: present }), { [STRICT_ENV]: '1' }));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/Tests\s+4 passed \(4\)/);
    expect(r.out).not.toContain('skipped');
  });
});

describe('requirement checks', () => {
  it('a tool is found through the PATH it is given, so a test can hide it', () => {
    expect(findInPath('node', { PATH: pathWith() })).toBeUndefined();
    const dir = pathWith({ node: process.execPath });
    expect(findInPath('node', { PATH: `/nonexistent:${dir}` })).toBe(join(dir, 'node'));
    expect(missingReason('openssl', { PATH: pathWith() })).toBe('openssl is not installed (apt-get install openssl)');
  });

  it('no Docker engine answers on a DOCKER_HOST socket that does not exist', () => {
    const reason = missingReason('docker', { ...process.env, DOCKER_HOST: 'unix:///nonexistent/keystone-test.sock' });
    expect(reason).toMatch(/^no Docker engine answered.*\(apt-get install docker\.io, start dockerd\)$/);
  });

  it('a dynamically linked busybox does not count: the test images need a static one', () => {
    expect(isStaticElf(process.execPath)).toBe(false); // node: dynamically linked
    expect(missingReason('busybox', { PATH: pathWith({ busybox: process.execPath }) })).toBe(
      'busybox on PATH is not statically linked (apt-get install busybox-static)',
    );
  });

  it('markers are read back from a full test name, parents included', () => {
    expect(requirementsInTitle('ContainerRuntime [needs docker, busybox] > starts [needs root]')).toEqual([
      'docker',
      'busybox',
      'root',
    ]);
    expect(requirementsInTitle('no marker [needs nothing-known]')).toEqual([]);
  });
});

// Issue 28, finding 6, against the real agent (bin/keystone.js, which runs dist/) and `keystone doctor`: the files the
// root agent trusts without making them must be such that no other user could change them, as sshd's StrictModes
// asks of its own. A configuration file that is group-writable, in a 0777 directory, owned by another user or reached
// through a link into that user's directory, and a trusted key any user may write: the agent does not start (exit 2,
// the file and the chmod or chown that fixes it, nothing created). A Git token file every user may read: the agent
// starts, and warns. Doctor fails each, naming the file and the fix. "Another user" is nobody (65534), for root.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess, is, processesUnder } from '../support/agent-harness.js';
import { PROJECT_ROOT } from '../support/example-repo.js';
import { needs } from '../support/requirements.js';
import { sleeper, stackFixture, type StackFixture } from '../support/stack-fixture.js';

const KEYSTONE = join(PROJECT_ROOT, 'bin', 'keystone.js');
const NOBODY = 65534;
const root = needs('root');
let fx: StackFixture;
let base: string;
let n = 0;
const agents: AgentProcess[] = [];

beforeAll(async () => {
  fx = await stackFixture({ signed: true, components: () => [sleeper('db')] });
  await fx.sign();
  base = mkdtempSync(join(tmpdir(), 'keystone-trusted-files-'));
  // The state directories are inside it: the components' unprivileged user must be able to pass through.
  chmodSync(base, 0o711);
});
afterEach(async () => {
  for (const a of agents.splice(0)) if (!a.exit) await a.kill9();
  for (const p of processesUnder(base)) process.kill(p.pid, 'SIGKILL');
});
afterAll(() => {
  fx?.cleanup();
  if (base) rmSync(base, { recursive: true, force: true });
});

/** A fresh directory (0755) for one case, with a copy of the trusted key (0644) and a state directory path in it. */
function place(): { dir: string; key: string; stateDir: string } {
  const dir = join(base, `case-${++n}`);
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const key = join(dir, 'release.pub');
  copyFileSync(fx.trustArgs[1]!, key);
  chmodSync(key, 0o644);
  return { dir, key, stateDir: join(dir, 'state') };
}

/** A configuration that would start the agent on the fixture, were the file (and its key) to be trusted. */
function writeConfig(file: string, key: string, stateDir: string): string {
  writeFileSync(
    file,
    `dir = ${JSON.stringify(fx.dir)}\nplan = ${JSON.stringify(fx.plan)}\ntrusted-key = [${JSON.stringify(key)}]\nstate-dir = ${JSON.stringify(stateDir)}\nlisten = "none"\n`,
  );
  chmodSync(file, 0o640);
  return file;
}

/** The agent as a device runs it; a start that is not refused is stopped by the timeout (and the test fails on it). */
function agent(args: string[]) {
  return spawnSync(process.execPath, [KEYSTONE, 'agent', '--log-format', 'json', ...args], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    timeout: 15_000,
  });
}

function doctor(args: string[]): {
  status: number | null;
  checks: Array<{ check: string; status: string; detail: string; fix: string; code: string | null }>;
} {
  const r = spawnSync(process.execPath, [KEYSTONE, 'doctor', '--json', ...args], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.stderr).toBe('');
  return { status: r.status, checks: JSON.parse(r.stdout) as ReturnType<typeof doctor>['checks'] };
}
const trustedFilesOf = (d: ReturnType<typeof doctor>) => d.checks.find((c) => c.check === 'trusted-files');

/** Exit 2, the problem with its fix and code on stderr, and nothing created on the device. */
function expectRefused(r: ReturnType<typeof agent>, stateDir: string, texts: string[], code: string): void {
  expect(r.status, `exit status (signal ${r.signal}); stderr: ${r.stderr}`).toBe(2);
  for (const t of texts) expect(r.stderr).toContain(t);
  expect(r.stderr).toContain(`[${code}]`);
  expect(existsSync(stateDir)).toBe(false);
}

describe('the files the agent trusts', { timeout: 60_000 }, () => {
  it('refuses a group-writable configuration file: exit 2, the file and chmod go-w', () => {
    const { dir, key, stateDir } = place();
    const file = writeConfig(join(dir, 'agent.toml'), key, stateDir);
    chmodSync(file, 0o664);
    expectRefused(
      agent(['--config', file]),
      stateDir,
      [`${file} is writable by other users (mode 0664)`, `chmod go-w ${file}`],
      'KS_CONFIG_UNSAFE',
    );
    const d = doctor(['--config', file]);
    expect(d.status).toBe(1);
    expect(trustedFilesOf(d)).toMatchObject({
      status: 'fail',
      code: 'KS_CONFIG_UNSAFE',
      detail: expect.stringContaining(`${file} is writable by other users (mode 0664)`),
      fix: `chmod go-w ${file}`,
    });
  });

  it('refuses a configuration file in a 0777 directory, naming the directory', () => {
    const { dir, key, stateDir } = place();
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const file = writeConfig(join(open, 'agent.toml'), key, stateDir);
    expectRefused(
      agent(['--config', file]),
      stateDir,
      [`${open}, a directory on the way to ${file}, is writable by other users (mode 0777)`, `chmod go-w ${open}`],
      'KS_CONFIG_UNSAFE',
    );
    expect(trustedFilesOf(doctor(['--config', file]))).toMatchObject({ status: 'fail', fix: `chmod go-w ${open}` });
  });

  it('refuses a trusted key any user may write, given on the command line or in the file', () => {
    const { dir, key, stateDir } = place();
    chmodSync(key, 0o666);
    const why = [`trusted key: ${key} is writable by other users (mode 0666): chmod go-w ${key}`];
    expectRefused(
      agent(['--dir', fx.dir, '--plan', fx.plan, '--trusted-key', key, '--state-dir', stateDir, '--listen', 'none']),
      stateDir,
      why,
      'KS_TRUSTED_KEY_UNSAFE',
    );
    const file = writeConfig(join(dir, 'agent.toml'), key, stateDir);
    expectRefused(agent(['--config', file]), stateDir, why, 'KS_TRUSTED_KEY_UNSAFE');
    expect(trustedFilesOf(doctor(['--config', file]))).toMatchObject({
      status: 'fail',
      code: 'KS_TRUSTED_KEY_UNSAFE',
      detail: `${key} is writable by other users (mode 0666)`,
      fix: `chmod go-w ${key}`,
    });
    // The control: the same key, 0644, and the agent runs.
    chmodSync(key, 0o644);
    expect(trustedFilesOf(doctor(['--config', file]))).toMatchObject({ status: 'pass' });
  });

  it('runs with a Git token file every user may read, and warns at its start with the chmod; doctor fails it', async () => {
    const { dir, stateDir } = place();
    const repo = join(dir, 'repo');
    const env = {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t.invalid',
    };
    const git = (...a: string[]) => expect(spawnSync('git', a, { cwd: repo, env, encoding: 'utf8' }).status).toBe(0);
    mkdirSync(repo);
    spawnSync('cp', ['-r', `${fx.dir}/.`, repo]);
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-q', '-m', 'fixture');
    const token = join(dir, 'git-token');
    writeFileSync(token, 'a-token-for-the-followed-repository\n');
    chmodSync(token, 0o644);
    const args = [
      '--repo',
      repo,
      '--plan',
      fx.plan,
      '--allow-unsigned',
      '--git-token-file',
      token,
      '--state-dir',
      stateDir,
      '--listen',
      'none',
      '--status',
      'none',
      '--poll',
      '1s',
      '--stop-on-exit',
    ];
    const a = new AgentProcess(
      spawn(process.execPath, [KEYSTONE, 'agent', '--log-format', 'json', ...args], {
        cwd: PROJECT_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    agents.push(a);
    const warning = await a.waitForLog(
      (l) => l.code === 'KS_SECRET_FILE_UNSAFE',
      15_000,
      0,
      'the warning about the token file',
    );
    expect(warning).toMatchObject({ level: 40, path: token, fix: `chmod 600 ${token}` });
    expect(warning.msg).toContain(`${token} is readable by other users (mode 0644)`);
    // A warning, not a refusal: the device keeps running.
    expect((await a.waitForLog(is.applyEnd, 20_000, 0, 'the first apply')).msg, a.tail()).toBe(
      'all components running',
    );
    expect((await a.stop()).code, a.tail()).toBe(0);

    const d = doctor(args.filter((x) => x !== '--stop-on-exit'));
    expect(trustedFilesOf(d)).toMatchObject({
      status: 'fail',
      code: 'KS_SECRET_FILE_UNSAFE',
      detail: `${token} is readable by other users (mode 0644), and so is the secret in it`,
      fix: `chmod 600 ${token}`,
    });
    chmodSync(token, 0o600);
    expect(trustedFilesOf(doctor(args))).toMatchObject({
      status: 'pass',
      detail: expect.stringContaining(`git-token-file ${token}`),
    });
  });

  describe.skipIf(root.skip)(root.title('another user'), () => {
    it('refuses a configuration file another user owns: exit 2, the file and chown root:', () => {
      const { dir, key, stateDir } = place();
      const file = writeConfig(join(dir, 'agent.toml'), key, stateDir);
      chownSync(file, NOBODY, NOBODY);
      expectRefused(
        agent(['--config', file]),
        stateDir,
        [`${file} is owned by uid ${NOBODY} (nobody)`, `chown root: ${file}`],
        'KS_CONFIG_UNSAFE',
      );
      expect(trustedFilesOf(doctor(['--config', file]))).toMatchObject({
        status: 'fail',
        code: 'KS_CONFIG_UNSAFE',
        fix: `chown root: ${file}`,
      });
    });

    it("refuses a configuration file reached through a link into another user's directory, naming that directory", () => {
      const { dir, key, stateDir } = place();
      const theirs = join(dir, 'home-of-nobody');
      mkdirSync(theirs, { mode: 0o755 });
      chownSync(theirs, NOBODY, NOBODY);
      const real = writeConfig(join(theirs, 'agent.toml'), key, stateDir);
      const etc = join(dir, 'etc');
      mkdirSync(etc, { mode: 0o755 });
      const file = join(etc, 'agent.toml');
      symlinkSync(real, file);
      expectRefused(
        agent(['--config', file]),
        stateDir,
        [`${theirs}, a directory on the way to ${file}, is owned by uid ${NOBODY} (nobody)`, `chown root: ${theirs}`],
        'KS_CONFIG_UNSAFE',
      );
      expect(trustedFilesOf(doctor(['--config', file]))).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining(theirs),
      });
    });
  });
});

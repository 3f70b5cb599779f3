// `keystone init`: a first configuration file, with its modes whatever the umask, never over an existing file without
// --force, never a file the agent would refuse (it is loaded back with the agent's loader), and never before the
// trusted keys are known to be keys. The modes are checked on the real program run under a strict umask.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAgentConfig } from '../../src/cli/agent-config.js';
import { AGENT_OPTIONS } from '../../src/cli/agent-options.js';
import { readDevicePublicIdentity } from '../../src/identity/device-keys.js';
import { main } from '../../src/cli/keystone.js';
import { runCtl } from '../support/cli-run.js';
import { PROJECT_ROOT } from '../support/example-repo.js';

let root: string;
let pub: string;
let n = 0;
/** A fresh /etc of its own for each test (not created: init makes what is missing). */
const freshEtc = () => join(root, `etc${++n}`, 'keystone');

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-init-'));
  const r = await runCtl(['keygen', '--out', join(root, 'release'), '--no-password'], root);
  expect(r.code, r.stderr).toBe(0);
  pub = join(root, 'release.pub');
  writeFileSync(join(root, 'not-a-key.pub'), 'untrusted comment: minisign public key 0\nnot base64 at all\n');
  mkdirSync(join(root, 'devrepo'));
  writeFileSync(join(root, 'git-token'), 'read-only-token\n', { mode: 0o600 });
  writeFileSync(join(root, 'status-token'), 'push-token\n', { mode: 0o600 });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** `keystone init` makes the device's keys in its state directory: each run gets its own, never /var/lib/keystone. */
let states = 0;
const withStateDir = (args: string[]) =>
  args[0] === 'init' && !args.includes('--state-dir') ? [...args, '--state-dir', join(root, `state${++states}`)] : args;

async function keystone(given: string[], cwd = root): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = withStateDir(given);
  let stdout = '';
  let stderr = '';
  const code = await main(
    args,
    { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, cwd, env: {} },
    { once: () => {} },
  );
  return { code, stdout, stderr };
}

const mode = (p: string) => statSync(p).mode & 0o777;

describe('keystone init', () => {
  it('writes 0640 and makes the missing directories 0755, whatever the umask (the real program, umask 077)', () => {
    const etc = freshEtc();
    const file = join(etc, 'agent.toml');
    const r = spawnSync(
      'sh',
      [
        '-c',
        'umask 077 && exec "$0" "$@"',
        process.execPath,
        join(PROJECT_ROOT, 'bin', 'keystone.js'),
        'init',
        '--config',
        file,
        '--repo',
        'https://git.example.com/acme/edge.git',
        '--status-repo',
        'https://git.example.com/acme/reports.git',
        '--trusted-key',
        pub,
        '--state-dir',
        join(root, 'state-umask'),
      ],
      {
        encoding: 'utf8',
        cwd: root,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(mode(file).toString(8)).toBe('640');
    expect(mode(etc).toString(8)).toBe('755');
    expect(mode(join(etc, '..')).toString(8)).toBe('755');
    expect(r.stdout).toContain(`wrote ${file} (mode 0640`);
    expect(r.stdout).toContain(`keystone agent --config ${file}`);
    expect(readdirSync(etc)).toEqual(['agent.toml']);
  });

  it('writes what it was given, loadable by the agent, with paths made absolute from where it ran', async () => {
    const file = join(freshEtc(), 'agent.toml');
    const r = await keystone(
      [
        'init',
        '--config',
        file,
        '--repo',
        'https://git.example.com/acme/edge.git',
        '--ref',
        'stable',
        '--status-repo',
        'https://git.example.com/acme/reports.git',
        '--status-token-file',
        'status-token',
        '--git-token-file',
        'git-token',
        '--plan',
        'plans/edge.toml',
        '--device',
        'edge-7',
        '--label',
        'hw=pi4',
        '--label',
        'region=eu',
        '--trusted-key',
        'release.pub',
        '--state-dir',
        'state',
      ],
      root,
    );
    expect(r.code, r.stderr).toBe(0);
    const loaded = readAgentConfig(file);
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.values).toEqual({
      repo: 'https://git.example.com/acme/edge.git',
      ref: 'stable',
      'status-repo': 'https://git.example.com/acme/reports.git',
      'status-token-file': join(root, 'status-token'),
      'git-token-file': join(root, 'git-token'),
      plan: 'plans/edge.toml',
      device: 'edge-7',
      label: ['hw=pi4', 'region=eu'],
      'trusted-key': [pub],
      'state-dir': join(root, 'state'),
    });
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^# .*keystone init/);
    expect(text).toContain(`trusted-key = [${JSON.stringify(pub)}]`);
  });

  it('--require-ref writes require-ref = true, which the agent loads as the flag', async () => {
    const file = join(freshEtc(), 'agent.toml');
    const r = await keystone([
      'init',
      '--config',
      file,
      '--repo',
      'https://git.example.com/acme/edge.git',
      '--status-repo',
      'https://git.example.com/acme/reports.git',
      '--trusted-key',
      pub,
      '--require-ref',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(readAgentConfig(file).values['require-ref']).toBe(true);
    const unsigned = await keystone([
      'init',
      '--config',
      join(freshEtc(), 'agent.toml'),
      '--dir',
      'devrepo',
      '--allow-unsigned',
      '--require-ref',
    ]);
    expect(unsigned.code).toBe(2);
  });

  it('--status-repo naming the followed repository itself is written, with a warning that the device can then push there', async () => {
    const file = join(freshEtc(), 'agent.toml');
    const same = 'https://git.example.com/acme/edge.git';
    const r = await keystone(['init', '--config', file, '--repo', same, '--status-repo', same, '--trusted-key', pub]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`warning: reports go to the followed repository ${same}`);
    expect(readAgentConfig(file).values['status-repo']).toBe(same);
  });

  it('the development form: --dir and --allow-unsigned; relative --dir made absolute', async () => {
    const file = join(freshEtc(), 'agent.toml');
    const r = await keystone(['init', '--config', file, '--dir', 'devrepo', '--allow-unsigned']);
    expect(r.code, r.stderr).toBe(0);
    const loaded = readAgentConfig(file);
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.values).toMatchObject({
      dir: join(root, 'devrepo'),
      'allow-unsigned': true,
      'state-dir': join(root, `state${states}`),
    });
    expect(loaded.values.repo).toBeUndefined();
  });

  it('refuses to overwrite an existing file without --force (exit 2), and replaces it with --force', async () => {
    const etc = freshEtc();
    mkdirSync(etc, { recursive: true });
    const file = join(etc, 'agent.toml');
    const own = '# the operator\'s own\nrepo = "https://git.example.com/acme/edge.git"\n';
    writeFileSync(file, own, { mode: 0o600 });
    const refused = await keystone(['init', '--config', file, '--dir', 'devrepo', '--allow-unsigned']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${file} exists and has settings; pass --force to overwrite it`);
    expect(readFileSync(file, 'utf8')).toBe(own);
    const forced = await keystone(['init', '--config', file, '--dir', 'devrepo', '--allow-unsigned', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readAgentConfig(file).values.dir).toBe(join(root, 'devrepo'));
    expect(mode(file).toString(8)).toBe('640');
    expect(readdirSync(etc)).toEqual(['agent.toml']);
  });

  it('replaces a file of nothing but comments (the template of the package) without --force: no setting is lost', async () => {
    const etc = freshEtc();
    mkdirSync(etc, { recursive: true });
    const file = join(etc, 'agent.toml');
    writeFileSync(
      file,
      '# template\n\n# repo = "https://git.example.com/fleet.git"\n   # state-dir = "/var/lib/keystone"\n',
      { mode: 0o644 },
    );
    const r = await keystone(['init', '--config', file, '--dir', 'devrepo', '--allow-unsigned']);
    expect(r.code, r.stderr).toBe(0);
    expect(readAgentConfig(file).values.dir).toBe(join(root, 'devrepo'));
    expect(mode(file).toString(8)).toBe('640');
  });

  it('checks the trusted keys before writing anything: a file that is not a key is refused (exit 2)', async () => {
    const etc = freshEtc();
    const r = await keystone([
      'init',
      '--config',
      join(etc, 'agent.toml'),
      '--repo',
      'https://git.example.com/acme/edge.git',
      '--status-repo',
      'https://git.example.com/acme/reports.git',
      '--trusted-key',
      'not-a-key.pub',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('refused');
    expect(r.stderr).toContain('not-a-key.pub');
    expect(r.stderr).toContain('[KS_KEY_MALFORMED]');
    expect(existsSync(etc)).toBe(false);
    const missing = await keystone([
      'init',
      '--config',
      join(etc, 'agent.toml'),
      '--repo',
      'https://git.example.com/acme/edge.git',
      '--status-repo',
      'https://git.example.com/acme/reports.git',
      '--trusted-key',
      'absent.pub',
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read the trusted key');
    expect(existsSync(etc)).toBe(false);
  });

  it.each([
    ['no source', ['--allow-unsigned'], 'give one source'],
    [
      'two sources',
      [
        '--repo',
        'https://git.example.com/x.git',
        '--status-repo',
        'https://git.example.com/r.git',
        '--dir',
        'devrepo',
        '--allow-unsigned',
      ],
      'give one source',
    ],
    [
      'no trust',
      ['--repo', 'https://git.example.com/x.git', '--status-repo', 'https://git.example.com/r.git'],
      'no trusted key',
    ],
    [
      'both trust forms',
      [
        '--repo',
        'https://git.example.com/x.git',
        '--status-repo',
        'https://git.example.com/r.git',
        '--allow-unsigned',
        '--trusted-key',
        'release.pub',
      ],
      'exclude each other',
    ],
    ['--ref with --dir', ['--dir', 'devrepo', '--ref', 'main', '--allow-unsigned'], '--ref is for a Git source'],
    [
      '--status-repo with --dir',
      ['--dir', 'devrepo', '--status-repo', 'https://git.example.com/r.git', '--allow-unsigned'],
      '--status-repo is for a Git source',
    ],
    [
      'a Git source without a reports repository',
      ['--repo', 'https://git.example.com/x.git', '--allow-unsigned'],
      'give --status-repo URL|PATH',
    ],
    ['a bad label', ['--dir', 'devrepo', '--allow-unsigned', '--label', 'role'], 'KEY=VALUE'],
    ['a bad device name', ['--dir', 'devrepo', '--allow-unsigned', '--device', 'edge 7'], 'not a device name'],
    ['an argument', ['--dir', 'devrepo', '--allow-unsigned', 'extra'], 'unexpected argument extra'],
    [
      'an agent flag init does not write',
      ['--dir', 'devrepo', '--allow-unsigned', '--poll', '5s'],
      "Unknown option '--poll'",
    ],
  ])('refuses %s with exit 2 and writes nothing', async (_what, args, says) => {
    const etc = freshEtc();
    const r = await keystone(['init', '--config', join(etc, 'agent.toml'), ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(says);
    expect(r.stderr).toContain('usage: keystone init');
    expect(existsSync(etc)).toBe(false);
  });

  it('a repository credential in the URL never reaches the file: the loader refuses it, nothing is written', async () => {
    const etc = freshEtc();
    const file = join(etc, 'agent.toml');
    const r = await keystone([
      'init',
      '--config',
      file,
      '--repo',
      'https://x:ghp_s3cretS3cretS3cret@git.example.com/acme/edge.git',
      '--status-repo',
      'https://git.example.com/acme/reports.git',
      '--trusted-key',
      'release.pub',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('[KS_CONFIG_SECRET_INLINE]');
    expect(r.stderr).toContain('nothing was written');
    expect(r.stderr).not.toContain('s3cret');
    expect(existsSync(etc)).toBe(false);
  });

  it('comments out the other keys with their defaults: each is an agent flag, and uncommented they still load', async () => {
    const file = join(freshEtc(), 'agent.toml');
    expect(
      (
        await keystone([
          'init',
          '--config',
          file,
          '--repo',
          'https://git.example.com/acme/edge.git',
          '--status-repo',
          'https://git.example.com/acme/reports.git',
          '--trusted-key',
          pub,
        ])
      ).code,
    ).toBe(0);
    const text = readFileSync(file, 'utf8');
    const commented = [...text.matchAll(/^# ([a-z-]+) = (.*)$/gm)];
    const keys = commented.map((m) => m[1]!);
    for (const k of keys) expect(Object.keys(AGENT_OPTIONS), k).toContain(k);
    expect(keys).toEqual(
      expect.arrayContaining(['poll', 'threshold', 'status', 'listen', 'concurrency', 'allow-mount']),
    );
    // Files named in the examples do not exist on this machine: those stay commented.
    const uncommented = text.replace(/^# ([a-z-]+ = (?!.*\/etc\/keystone\/).*)$/gm, '$1');
    writeFileSync(file, uncommented);
    expect(readAgentConfig(file).diagnostics).toEqual([]);
  });
  it("makes the device's keys in the state directory and prints their public halves; init again keeps them", async () => {
    const stateDir = join(root, 'state-keys');
    const file = join(freshEtc(), 'agent.toml');
    const r = await keystone([
      'init',
      '--config',
      file,
      '--dir',
      'devrepo',
      '--allow-unsigned',
      '--device',
      'edge-9',
      '--state-dir',
      stateDir,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const id = (await readDevicePublicIdentity(stateDir))!;
    expect(id.reportKey).toMatch(/^RW/);
    expect(r.stdout).toContain(
      `made the device's keys in ${join(stateDir, 'identity')}:\n  device         edge-9\n  report key     ${id.reportKey}\n  age recipient  ${id.ageRecipient}\n`,
    );
    expect(r.stdout).toContain(`keystone identity --config ${file} --json > edge-9.identity.json`);
    expect(r.stdout).not.toContain('AGE-SECRET-KEY');
    expect(mode(join(stateDir, 'identity')).toString(8)).toBe('700');
    expect(mode(join(stateDir, 'identity', 'report.key')).toString(8)).toBe('600');

    const again = await keystone([
      'init',
      '--config',
      file,
      '--dir',
      'devrepo',
      '--allow-unsigned',
      '--device',
      'edge-9',
      '--state-dir',
      stateDir,
      '--force',
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`kept the device's keys in ${join(stateDir, 'identity')}:`);
    expect(await readDevicePublicIdentity(stateDir)).toEqual(id);
  });

  it('writes --enrollment-key and --certificate, which the agent loads as its flags', async () => {
    const file = join(freshEtc(), 'agent.toml');
    writeFileSync(join(root, 'device.cert'), 'keystone-certificate = 1\n');
    const r = await keystone([
      'init',
      '--config',
      file,
      '--dir',
      'devrepo',
      '--allow-unsigned',
      '--enrollment-key',
      'release.pub',
      '--certificate',
      'device.cert',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const loaded = readAgentConfig(file);
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.values).toMatchObject({ 'enrollment-key': [pub], certificate: join(root, 'device.cert') });
    // Without them, both stay commented out, as examples.
    const plain = join(freshEtc(), 'agent.toml');
    expect((await keystone(['init', '--config', plain, '--dir', 'devrepo', '--allow-unsigned'])).code).toBe(0);
    expect(readFileSync(plain, 'utf8')).toMatch(/^# enrollment-key = \["\/etc\/keystone\/keys\/enroll\.pub"\]$/m);
    expect(readAgentConfig(plain).values['enrollment-key']).toBeUndefined();
  });

  it('refuses an enrollment key that is not a key and a certificate too large to be one (exit 2), writing nothing', async () => {
    const etc = freshEtc();
    const notKey = await keystone([
      'init',
      '--config',
      join(etc, 'agent.toml'),
      '--dir',
      'devrepo',
      '--allow-unsigned',
      '--enrollment-key',
      'not-a-key.pub',
    ]);
    expect(notKey.code).toBe(2);
    expect(notKey.stderr).toContain(`--enrollment-key ${join(root, 'not-a-key.pub')} is not a minisign public key`);
    writeFileSync(join(root, 'huge.cert'), 'x'.repeat(17 * 1024));
    const huge = await keystone([
      'init',
      '--config',
      join(etc, 'agent.toml'),
      '--dir',
      'devrepo',
      '--allow-unsigned',
      '--certificate',
      'huge.cert',
    ]);
    expect(huge.code).toBe(2);
    expect(huge.stderr).toContain('more than a certificate can be (16384)');
    expect(existsSync(etc)).toBe(false);
  });
});

// `keystone agent --config FILE`: every way a configuration file can be wrong is told like a bad recipe (the file, the
// TOML path, the line, a stable code) and ends the command with exit code 2 before anything starts. Real files in a
// temp directory, the real `keystone` entry point in-process.
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/keystone.js';
import { runCtl } from '../support/cli-run.js';

let root: string;
let repoDir: string;
let keyPub: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'keystone-config-'));
  repoDir = join(root, 'repo');
  mkdirSync(repoDir);
  const r = await runCtl(['keygen', '--out', join(root, 'release'), '--no-password'], root);
  expect(r.code, r.stderr).toBe(0);
  keyPub = join(root, 'release.pub');
  copyFileSync(keyPub, join(root, 'release-copy.pub'));
  writeFileSync(join(root, 'token'), 'ghp_0123456789abcdef\n', { mode: 0o600 });
  writeFileSync(join(root, 'empty-token'), '\n');
  writeFileSync(join(root, 'not-a-key.pub'), 'untrusted comment: nothing\nbm90IGEga2V5\n');
  mkdirSync(join(root, 'a-directory'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** Writes a configuration file (its own directory, inside root) and returns its path. */
function configFile(text: string | Buffer): string {
  const dir = join(root, `c${++n}`);
  mkdirSync(dir);
  const file = join(dir, 'agent.toml');
  writeFileSync(file, text);
  return file;
}

async function keystone(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(
    args,
    {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      cwd: root,
      env: {},
    },
    { once: () => {} },
  );
  return { code, stdout, stderr };
}

/** A valid development configuration (3 lines) the cases add one problem to; their lines count from 4. */
const DIR_BASE = () => `dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "none"\n`;
/** The same for a Git source. */
const REPO_BASE = () =>
  `repo = "https://git.example.com/acme/edge.git"\ntrusted-key = [${JSON.stringify(keyPub)}]\nlisten = "none"\n`;

interface Case {
  what: string;
  text: () => string | Buffer;
  code: string;
  /** The TOML path as printed ("" for the whole file). */
  path: string;
  line?: number;
  /** A piece of the message (or hint) the operator reads. */
  says?: string | RegExp;
}

const CASES: Case[] = [
  {
    what: 'an unknown key, with the close one',
    text: () => DIR_BASE() + 'trusted-keys = []\n',
    code: 'KS_UNKNOWN_KEY',
    path: 'trusted-keys',
    line: 4,
    says: 'did you mean "trusted-key"?',
  },
  {
    what: 'a boolean of the wrong type',
    text: () => DIR_BASE() + 'stop-on-exit = "yes"\n',
    code: 'KS_INVALID_TYPE',
    path: 'stop-on-exit',
    line: 4,
    says: 'expected a boolean',
  },
  {
    what: 'a list written as a string',
    text: () => DIR_BASE() + 'label = "role=gateway"\n',
    code: 'KS_INVALID_TYPE',
    path: 'label',
    line: 4,
    says: 'label = ["role=gateway"]',
  },
  {
    what: 'a list element of the wrong type',
    text: () => DIR_BASE() + 'label = ["role=gateway",\n  7]\n',
    code: 'KS_INVALID_TYPE',
    path: 'label[1]',
    line: 5,
  },
  {
    what: 'a string key given a table',
    text: () => DIR_BASE() + '[plan]\nname = "x"\n',
    code: 'KS_INVALID_TYPE',
    path: 'plan',
    line: 4,
    says: 'got a table',
  },
  {
    what: 'a duration given as a number',
    text: () => DIR_BASE() + 'grace = 10\n',
    code: 'KS_INVALID_TYPE',
    path: 'grace',
    line: 4,
    says: 'durations are strings',
  },
  {
    what: 'a bad poll',
    text: () => REPO_BASE() + 'poll = "1 minute"\n',
    code: 'KS_BAD_DURATION',
    path: 'poll',
    line: 4,
  },
  {
    what: 'a poll of zero',
    text: () => REPO_BASE() + 'poll = "0s"\n',
    code: 'KS_BAD_DURATION',
    path: 'poll',
    line: 4,
    says: 'more than zero',
  },
  { what: 'a bad grace', text: () => DIR_BASE() + 'grace = "10"\n', code: 'KS_BAD_DURATION', path: 'grace', line: 4 },
  {
    what: 'a bad settle',
    text: () => DIR_BASE() + 'settle = "-1s"\n',
    code: 'KS_BAD_DURATION',
    path: 'settle',
    line: 4,
  },
  {
    what: 'a bad max-backoff',
    text: () => DIR_BASE() + 'max-backoff = "1y"\n',
    code: 'KS_BAD_DURATION',
    path: 'max-backoff',
    line: 4,
  },
  {
    what: 'a bad healthy-spell',
    text: () => DIR_BASE() + 'healthy-spell = "ten minutes"\n',
    code: 'KS_BAD_DURATION',
    path: 'healthy-spell',
    line: 4,
  },
  {
    what: 'a bad max-age',
    text: () => REPO_BASE() + 'max-age = "30d"\n',
    code: 'KS_BAD_DURATION',
    path: 'max-age',
    line: 4,
  },
  {
    what: 'a bad max-clock-skew',
    text: () => REPO_BASE() + 'max-clock-skew = "5 m"\n',
    code: 'KS_BAD_DURATION',
    path: 'max-clock-skew',
    line: 4,
  },
  {
    what: 'a window without its timezone',
    text: () => DIR_BASE() + 'window = "mon 02:00-04:00"\n',
    code: 'KS_INVALID_VALUE',
    path: 'window',
    line: 4,
    says: 'is not a window',
  },
  {
    what: 'a window in a zone the device does not know',
    text: () => DIR_BASE() + 'window = "mon 02:00-04:00 Mars/Base"\n',
    code: 'KS_INVALID_VALUE',
    path: 'window',
    line: 4,
    says: 'not a timezone',
  },
  {
    what: 'a bad integer',
    text: () => DIR_BASE() + 'concurrency = "two"\n',
    code: 'KS_INVALID_VALUE',
    path: 'concurrency',
    line: 4,
    says: 'not a whole number',
  },
  {
    what: 'an integer below 1',
    text: () => DIR_BASE() + 'crash-loop-limit = 0\n',
    code: 'KS_INVALID_VALUE',
    path: 'crash-loop-limit',
    line: 4,
    says: 'at least 1',
  },
  {
    what: 'a fraction',
    text: () => DIR_BASE() + 'log-keep = 2.5\n',
    code: 'KS_INVALID_VALUE',
    path: 'log-keep',
    line: 4,
  },
  {
    what: 'an integer of the wrong type',
    text: () => DIR_BASE() + 'log-max-bytes = true\n',
    code: 'KS_INVALID_TYPE',
    path: 'log-max-bytes',
    line: 4,
  },
  {
    what: 'a bad on-failure',
    text: () => REPO_BASE() + 'on-failure = "retry"\n',
    code: 'KS_INVALID_VALUE',
    path: 'on-failure',
    line: 4,
    says: '"none", "rollback"',
  },
  {
    what: 'a bad log-format',
    text: () => DIR_BASE() + 'log-format = "text"\n',
    code: 'KS_INVALID_VALUE',
    path: 'log-format',
    line: 4,
    says: '"pretty", "json"',
  },
  {
    what: 'a label without =',
    text: () => DIR_BASE() + 'label = ["role"]\n',
    code: 'KS_BAD_LABEL',
    path: 'label[0]',
    line: 4,
    says: 'KEY=VALUE',
  },
  {
    what: 'a bad label value',
    text: () => DIR_BASE() + 'label = ["site=lab", "role=bad value"]\n',
    code: 'KS_BAD_LABEL',
    path: 'label[1]',
    line: 4,
    says: 'not a label value',
  },
  {
    what: 'a label key given twice',
    text: () => DIR_BASE() + 'label = [\n  "role=a",\n  "role=b",\n]\n',
    code: 'KS_BAD_LABEL',
    path: 'label[1]',
    line: 6,
    says: 'given twice',
  },
  {
    what: 'a bad device name',
    text: () => DIR_BASE() + 'device = "edge 7"\n',
    code: 'KS_BAD_NAME',
    path: 'device',
    line: 4,
  },
  {
    what: 'a trusted key that does not exist',
    text: () => `dir = ${JSON.stringify(repoDir)}\nlisten = "none"\ntrusted-key = ["keys/release.pub"]\n`,
    code: 'KS_FILE_NOT_FOUND',
    path: 'trusted-key[0]',
    line: 3,
    says: "taken from the configuration file's directory",
  },
  {
    what: 'a trusted key that is not a key',
    text: () => `dir = ${JSON.stringify(repoDir)}\ntrusted-key = [${JSON.stringify(join(root, 'not-a-key.pub'))}]\n`,
    code: 'KS_KEY_MALFORMED',
    path: 'trusted-key[0]',
    line: 2,
  },
  {
    what: 'a token file that does not exist',
    text: () => REPO_BASE() + 'git-token-file = "/nonexistent/git-token"\n',
    code: 'KS_FILE_NOT_FOUND',
    path: 'git-token-file',
    line: 4,
  },
  {
    what: 'a token file that cannot be read',
    text: () => REPO_BASE() + 'github-token-file = "/proc/self/mem"\n',
    code: 'KS_FILE_UNREADABLE',
    path: 'github-token-file',
    line: 4,
    says: 'cannot be read',
  },
  {
    what: 'a secret file that is a directory',
    text: () => REPO_BASE() + `webhook-secret-file = ${JSON.stringify(join(root, 'a-directory'))}\n`,
    code: 'KS_NOT_A_FILE',
    path: 'webhook-secret-file',
    line: 4,
  },
  {
    what: 'an empty token file',
    text: () => REPO_BASE() + `git-token-file = ${JSON.stringify(join(root, 'empty-token'))}\n`,
    code: 'KS_INVALID_VALUE',
    path: 'git-token-file',
    line: 4,
    says: 'is empty',
  },
  {
    what: 'both repo and dir',
    text: () => REPO_BASE() + `dir = ${JSON.stringify(repoDir)}\n`,
    code: 'KS_CONFIG_SOURCE',
    path: 'dir',
    line: 4,
    says: 'exclude each other',
  },
  {
    what: 'neither repo nor dir',
    text: () => 'allow-unsigned = true\n',
    code: 'KS_CONFIG_SOURCE',
    path: '',
    says: 'neither repo nor dir',
  },
  {
    what: 'a Git key with dir',
    text: () => DIR_BASE() + 'ref = "main"\n',
    code: 'KS_CONFIG_CONFLICT',
    path: 'ref',
    line: 4,
    says: 'for a Git source',
  },
  {
    what: 'allow-unsigned with trusted keys',
    text: () => REPO_BASE() + 'allow-unsigned = true\n',
    code: 'KS_CONFIG_CONFLICT',
    path: 'allow-unsigned',
    line: 4,
  },
  {
    what: 'no trust at all',
    text: () => 'repo = "https://git.example.com/acme/edge.git"\n',
    code: 'KS_MISSING_FIELD',
    path: 'trusted-key',
    says: 'no trusted key',
  },
  {
    what: 'a threshold above the keys',
    text: () => REPO_BASE() + 'threshold = 2\n',
    code: 'KS_INVALID_VALUE',
    path: 'threshold',
    line: 4,
    says: 'distinct trusted keys',
  },
  // Two files holding one key are one signer: the file is refused, not the agent's start.
  {
    what: 'a threshold met only by two copies of one key',
    text: () =>
      `repo = "https://git.example.com/acme/edge.git"\ntrusted-key = [${JSON.stringify(keyPub)}, ${JSON.stringify(join(root, 'release-copy.pub'))}]\nthreshold = 2\n`,
    code: 'KS_INVALID_VALUE',
    path: 'threshold',
    line: 3,
    says: '1 named',
  },
  {
    what: 'a public listen address without listen-public',
    text: () => `dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "0.0.0.0:8080"\n`,
    code: 'KS_CONFIG_CONFLICT',
    path: 'listen',
    line: 3,
    says: 'listen-public = true',
  },
  {
    what: 'a bad listen address',
    text: () => `dir = ${JSON.stringify(repoDir)}\nallow-unsigned = true\nlisten = "8080"\n`,
    code: 'KS_INVALID_VALUE',
    path: 'listen',
    line: 3,
  },
  {
    what: 'a bad status reporter',
    text: () => REPO_BASE() + 'status = "git-notes,email"\n',
    code: 'KS_INVALID_VALUE',
    path: 'status',
    line: 4,
    says: '"email"',
  },
  {
    what: 'a relative allow-mount',
    text: () => DIR_BASE() + 'allow-mount = ["srv/data"]\n',
    code: 'KS_INVALID_VALUE',
    path: 'allow-mount[0]',
    line: 4,
    says: 'absolute host path',
  },
  {
    what: 'an allow-device outside /dev',
    text: () => DIR_BASE() + 'allow-device = ["/etc/shadow"]\n',
    code: 'KS_INVALID_VALUE',
    path: 'allow-device[0]',
    line: 4,
  },
  {
    what: 'an unknown capability',
    text: () => DIR_BASE() + 'allow-capability = ["CAP_EVERYTHING"]\n',
    code: 'KS_BAD_CAPABILITY',
    path: 'allow-capability[0]',
    line: 4,
  },
  {
    what: 'an empty string',
    text: () => DIR_BASE() + 'state-dir = ""\n',
    code: 'KS_INVALID_VALUE',
    path: 'state-dir',
    line: 4,
    says: 'must not be empty',
  },
  {
    what: 'a control character',
    text: () => DIR_BASE() + 'plan = "plans/a\\u0007.toml"\n',
    code: 'KS_INVALID_VALUE',
    path: 'plan',
    line: 4,
    says: 'control characters',
  },
  {
    what: 'a git URL of an unsupported kind',
    text: () => 'repo = "git@github.com:acme/edge.git"\nallow-unsigned = true\n',
    code: 'KS_INVALID_VALUE',
    path: 'repo',
    line: 1,
    says: 'SSH',
  },
  {
    what: "invalid TOML, with the parser's line",
    text: () => DIR_BASE() + '\npoll = \n',
    code: 'KS_TOML_SYNTAX',
    path: '',
    line: 5,
  },
  {
    what: 'a key given twice',
    text: () => DIR_BASE() + 'listen = "none"\n',
    code: 'KS_TOML_SYNTAX',
    path: '',
    line: 4,
  },
  {
    what: 'bytes that are not UTF-8',
    text: () => Buffer.concat([Buffer.from(DIR_BASE() + 'device = "'), Buffer.from([0xff, 0xfe]), Buffer.from('"\n')]),
    code: 'KS_TOML_SYNTAX',
    path: '',
    line: 4,
    says: 'not UTF-8',
  },
];

/** Secrets written inline: refused, and never repeated in the message. */
const SECRET_CASES: Case[] = [
  {
    what: 'a token key',
    text: () => REPO_BASE() + 'git-token = "ghp_s3cretS3cretS3cret"\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'git-token',
    line: 4,
    says: 'git-token-file',
  },
  {
    what: 'a webhook secret key',
    text: () => REPO_BASE() + 'webhook-secret = "ghp_s3cretS3cretS3cret"\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'webhook-secret',
    line: 4,
    says: 'webhook-secret-file',
  },
  {
    what: 'a password key',
    text: () => REPO_BASE() + 'password = "ghp_s3cretS3cretS3cret"\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'password',
    line: 4,
  },
  {
    what: 'a token where its file should be named',
    text: () => REPO_BASE() + 'github-token-file = "ghp_s3cretS3cretS3cret"\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'github-token-file',
    line: 4,
  },
  {
    what: 'credentials in the repository URL',
    text: () => 'repo = "https://oauth2:ghp_s3cretS3cretS3cret@git.example.com/acme/edge.git"\nallow-unsigned = true\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'repo',
    line: 1,
  },
  {
    what: 'credentials in the GitHub API URL',
    text: () => REPO_BASE() + 'github-api = "https://x:ghp_s3cretS3cretS3cret@api.github.com"\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'github-api',
    line: 4,
  },
  {
    what: 'a public key written inline',
    text: () =>
      'repo = "https://git.example.com/acme/edge.git"\ntrusted-key = ["RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"]\n',
    code: 'KS_CONFIG_SECRET_INLINE',
    path: 'trusted-key[0]',
    line: 2,
    says: 'named by its file',
  },
];

describe('keystone agent --config: a bad file is exit 2 with the file, the TOML path and the line', () => {
  for (const c of [...CASES, ...SECRET_CASES]) {
    it(c.what, async () => {
      const file = configFile(c.text());
      const r = await keystone(['agent', '--config', file]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`keystone agent: the configuration file ${file} is invalid`);
      expect(r.stderr).toContain('nothing was started');
      const where = c.line !== undefined ? `${file}:${c.line}:` : `${file}:`;
      const line = r.stderr.split('\n').find((l) => l.includes(`[${c.code}]`));
      expect(line, r.stderr).toBeDefined();
      expect(line).toContain(c.path ? `${where} ${c.path}: ` : `${where} `);
      if (c.line === undefined) expect(line).not.toMatch(new RegExp(`${file}:\\d`));
      if (c.says !== undefined) expect(line).toMatch(c.says);
      // The one problem is the only one: each case isolates its error.
      expect(r.stderr, r.stderr).toContain('(1 error)');
      expect(r.stderr).not.toContain('s3cret');
    });
  }
});

describe('the configuration file itself', () => {
  it('does not exist', async () => {
    const r = await keystone(['agent', '--config', 'nowhere/agent.toml']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(root, 'nowhere/agent.toml')}: the configuration file does not exist`);
    expect(r.stderr).toContain('[KS_FILE_NOT_FOUND]');
  });

  it('is a directory', async () => {
    const r = await keystone(['agent', '--config', join(root, 'a-directory')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('[KS_NOT_A_FILE]');
  });

  it('is too large', async () => {
    const r = await keystone(['agent', '--config', configFile(DIR_BASE() + '#'.repeat(1024 * 1024) + '\n')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('[KS_FILE_TOO_LARGE]');
  });

  it('is writable by every user, or by a group: refused, since whoever edits it decides what the agent allows', async () => {
    const file = configFile(DIR_BASE());
    for (const mode of [0o666, 0o664]) {
      chmodSync(file, mode);
      const r = await keystone(['agent', '--config', file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `${file}: ${file} is writable by other users (mode 0${mode.toString(8)}), so they could decide what the agent allows (chmod go-w ${file}) [KS_CONFIG_UNSAFE]`,
      );
    }
  });

  it('reports every problem, in line order, not just the first', async () => {
    const file = configFile(REPO_BASE() + 'poll = "soon"\nlabel = ["x"]\ngrace = 3\n');
    const r = await keystone(['agent', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('(3 errors)');
    const lines = r.stderr.split('\n').filter((l) => l.startsWith(`  ${file}:`));
    expect(lines.map((l) => Number(l.slice(file.length + 3).split(':')[0]))).toEqual([4, 5, 6]);
  });

  it('--config with no file is a usage error', async () => {
    const r = await keystone(['agent', '--config=']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--config takes the configuration file');
  });
});

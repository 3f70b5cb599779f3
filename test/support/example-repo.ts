// A throwaway copy of the example repository, as a real Git repository, signed with a throwaway key.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCtl } from './cli-run.js';

export const PROJECT_ROOT = resolve(import.meta.dirname, '../..');

export interface ExampleRepo {
  dir: string;
  /** Where the key pair lives: outside the repository, as on an operator's machine. */
  keyDir: string;
  /** `['--trusted-key', <the public key>]`, for commands that load the repository. */
  trust: string[];
  git(...args: string[]): string;
  edit(file: string, from: string | RegExp, to: string): void;
  /** Re-signs the repository (SHA256SUMS and its signature) as an operator would after an edit. */
  sign(): Promise<void>;
  commit(message: string): string;
  cleanup(): void;
}

/**
 * Signing times advance a second per signature, so replay checks see a strict order; they start a day in the past,
 * since a signature dated after the verifier's clock (plus a few minutes of skew) is refused.
 */
let clock = Math.floor(Date.now() / 1000) - 86_400;

export async function exampleRepo(opts: { signed?: boolean } = {}): Promise<ExampleRepo> {
  const signed = opts.signed ?? true;
  const dir = mkdtempSync(join(tmpdir(), 'keystone-example-'));
  const keyDir = mkdtempSync(join(tmpdir(), 'keystone-key-'));
  for (const d of ['recipes', 'plans', 'artifacts']) cpSync(join(PROJECT_ROOT, d), join(dir, d), { recursive: true });
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'commit.gpgsign=false', ...args],
      { cwd: dir, encoding: 'utf8' },
    ).trim();
  const must = async (args: string[]) => {
    const r = await runCtl(args, dir, { now: () => ++clock * 1000 });
    if (r.code !== 0) throw new Error(`keystonectl ${args.join(' ')}: ${r.stderr}`);
  };
  const keyPrefix = join(keyDir, 'test');
  if (signed) await must(['keygen', '--out', keyPrefix, '--no-password']);
  const repo: ExampleRepo = {
    dir,
    keyDir,
    trust: signed ? ['--trusted-key', `${keyPrefix}.pub`] : ['--allow-unsigned'],
    git,
    edit(file, from, to) {
      const p = join(dir, file);
      const before = readFileSync(p, 'utf8');
      const after = before.replace(from, to);
      if (after === before) throw new Error(`edit of ${file} changed nothing`);
      writeFileSync(p, after);
    },
    async sign() {
      if (signed) await must(['sign', '--key', `${keyPrefix}.key`]);
    },
    commit(message) {
      git('add', '-A');
      git('commit', '-q', '-m', message);
      return git('rev-parse', 'HEAD');
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
  git('init', '-q', '-b', 'main');
  await repo.sign();
  repo.commit('example');
  return repo;
}

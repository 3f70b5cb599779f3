// A real Git smart-HTTP server (git http-backend) for the Git notes reporter's tests, with the git CLI to seed
// repositories and read notes back as an operator would. The CLI runs asynchronously: the server lives in the
// test's own process.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { statusContext, type CommitStatus } from '../../src/report/commit-status.js';
import { deviceNotesRef } from '../../src/report/device-notes-ref.js';
import { GitNotesReporter } from '../../src/report/git-notes-reporter.js';
import type { GitNotesReporterOptions } from '../../src/report/git-notes-reporter-options.js';
import { startGitHttpServer, type GitHttpServer, type ServedRequest } from './git-http-server.js';

export const run = promisify(execFile);
export const TOKEN = 'notes-secret-token-4711';
const AUTH = ['-c', `http.extraHeader=Authorization: Bearer ${TOKEN}`];
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t',
};

/** The one fetch docs/gitops.md gives an operator: the shared ref of earlier agents and every device's own ref. */
export const NOTES_FETCH_REFSPEC = '+refs/notes/keystone*:refs/notes/keystone*';

export async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', [...AUTH, ...args], { cwd, env: GIT_ENV });
  return stdout;
}

export function status(
  commit: string,
  device: string,
  state: CommitStatus['state'],
  description: string,
  at = Date.UTC(2025, 0, 2, 3, 4, 5),
): CommitStatus {
  return { commit, state, description, context: statusContext(device), at };
}

export class NotesFixture {
  private readonly dirs: string[] = [];
  private constructor(
    readonly root: string,
    readonly server: GitHttpServer,
  ) {}

  static async start(): Promise<NotesFixture> {
    const root = mkdtempSync(join(tmpdir(), 'keystone-notes-srv-'));
    return new NotesFixture(root, await startGitHttpServer({ root, token: TOKEN }));
  }

  async close(): Promise<void> {
    await this.server.stop();
    rmSync(this.root, { recursive: true, force: true });
  }

  cleanDirs(): void {
    for (const d of this.dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }

  tempDir(prefix = 'keystone-notes-'): string {
    const d = mkdtempSync(join(tmpdir(), prefix));
    this.dirs.push(d);
    return d;
  }

  /** A remote with one pushed commit, and a clone of it; returns the commit id. */
  async remoteWithCommit(name: string): Promise<{ url: string; bare: string; clone: string; commit: string }> {
    const bare = this.server.createRepository(name);
    const clone = this.tempDir('keystone-notes-clone-');
    await git(clone, 'init', '--quiet', '--initial-branch=main');
    writeFileSync(join(clone, 'plan.toml'), `# ${name}\n`);
    await git(clone, 'add', '.');
    await git(clone, 'commit', '--quiet', '-m', 'first');
    await git(clone, 'remote', 'add', 'origin', this.server.url(name));
    await git(clone, 'push', '--quiet', 'origin', 'main');
    return { url: this.server.url(name), bare, clone, commit: (await git(clone, 'rev-parse', 'HEAD')).trim() };
  }

  reporter(url: string, device: string, over: Partial<GitNotesReporterOptions> = {}): GitNotesReporter {
    return new GitNotesReporter({
      repository: url,
      cacheDir: join(this.tempDir('keystone-notes-cache-'), 'notes.git'),
      token: TOKEN,
      ...over,
      name: `notes-${device}`,
    });
  }

  /** The server's requests to one repository, from index `from` of its log on. */
  served(name: string, from = 0): ServedRequest[] {
    return this.server.requests.slice(from).filter((r) => r.path.startsWith(`/${name}.git/`));
  }
}

export async function fetchNotes(clone: string): Promise<void> {
  await git(clone, 'fetch', '--quiet', 'origin', NOTES_FETCH_REFSPEC);
}

/** What `git notes show` says for one device's own ref, after the operator's fetch. */
export async function cliNote(clone: string, commit: string, device = 'dev-a'): Promise<string> {
  await fetchNotes(clone);
  return git(clone, 'notes', '--ref', deviceNotesRef(device), 'show', commit);
}

/** Every line noted under a commit, old shared ref and per-device refs, with docs/gitops.md's command. */
export async function cliAllLines(clone: string, commit: string): Promise<string[]> {
  await fetchNotes(clone);
  const out = await git(clone, 'log', '--no-walk', '--notes=keystone*', '--format=%N', commit);
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .sort();
}

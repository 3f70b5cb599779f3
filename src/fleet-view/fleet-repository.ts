// Opening the repository the fleet view reads (fleet-reports-read.ts reads it): the commit to view, and where the
// devices' reports are. Apart from the reading because it is the one place native git runs, and a remote is fetched.
//
// A local repository (a work tree or a bare one) is read as it is. A remote is brought into a bare cache repository
// of ours with ONE native `git fetch` of the branch and `+refs/notes/keystone*:refs/notes/keystone*`: every
// device's own notes ref and the shared ref of earlier agents, however many devices there are (SPEC §8), and the
// rollout refs beside them (SPEC §14; fleet-rollout-read.ts), which cost nothing where there are none. Native git,
// because isomorphic-git fetches one non-branch ref at a time, which would be one fetch per device. The fetch is
// shallow (--depth, default 1): a notes ref's tip commit carries, in its tree, every note that device ever wrote, and
// its message names the commit of its newest report, so the notes' history is never needed; the branch's history
// only tells an older commit from another one, and the ancestry search says "unknown" where it is cut off.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import git from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { UnknownRefError } from './unknown-ref-error.js';
import { locateGitRepository, resolveCommit } from '../source/git-tree-reader.js';
import { ROLLOUT_REFSPEC } from './fleet-rollout-read.js';
import { isCommitId } from '../git/commit-id.js';
import { redactUrl } from '../git/git-repo-location.js';

const exec = promisify(execFile);

export interface FleetRepository {
  gitdir: string;
  commit: string;
  /** What was asked for, for the output: `main`, `HEAD`, a commit id. */
  label: string;
}

export interface OpenFleetRepositoryOptions {
  /** A path, or an http(s) URL. */
  repo: string;
  /** The branch followed; undefined: HEAD of a local repository, `main` of a remote. */
  ref?: string;
  /** The commit to view; default the tip of `ref`. */
  commit?: string;
  /** Remote: the directory holding the caches; default $XDG_CACHE_HOME/keystone/fleet, else ~/.cache/keystone/fleet. */
  cacheDir?: string;
  token?: string;
  /** Remote: the history fetched (--depth); default 1. */
  depth?: number;
  env: Record<string, string | undefined>;
  timeoutMs?: number;
}

export const isRemote = (repo: string) => /^https?:\/\//i.test(repo);

/** The repository and the commit to view: a local path as it is, a remote after its one fetch. */
export async function openFleetRepository(o: OpenFleetRepositoryOptions): Promise<FleetRepository> {
  if (!isRemote(o.repo)) {
    const want = o.commit ?? o.ref ?? 'HEAD';
    const dotGit = join(o.repo, '.git');
    if (fs.existsSync(dotGit) && fs.statSync(dotGit).isFile()) return openLinkedWorktree(o, want);
    const loc = locateGitRepository(o.repo);
    return { gitdir: loc.gitdir, commit: await resolveOrThrow(loc.gitdir, want), label: want };
  }
  const ref = o.ref ?? 'main';
  const gitdir = join(o.cacheDir ?? defaultCacheRoot(o.env), createHash('sha256').update(o.repo).digest('hex'));
  if (!fs.existsSync(join(gitdir, 'HEAD')))
    await runGit(['init', '--quiet', '--bare', gitdir], o, 'creating the cache');
  await fetchRemote(
    gitdir,
    o.repo,
    [`+refs/heads/${ref}:refs/heads/${ref}`, '+refs/notes/keystone*:refs/notes/keystone*', ROLLOUT_REFSPEC],
    o,
    ref,
  );
  const want = o.commit ?? ref;
  try {
    return { gitdir, commit: await resolveOrThrow(gitdir, want), label: want };
  } catch (e) {
    // An older commit than the shallow fetch brought: one more fetch, of that commit alone (not per device).
    if (!(e instanceof UnknownRefError) || !isCommitId(want.toLowerCase())) throw e;
    await fetchRemote(gitdir, o.repo, [want.toLowerCase()], o, want);
    return { gitdir, commit: await resolveOrThrow(gitdir, want), label: want };
  }
}

/** A reports repository (`--reports`): a local one as it is, a remote after one fetch of every notes and rollout ref. */
export async function openReportsRepository(
  o: Omit<OpenFleetRepositoryOptions, 'ref' | 'commit' | 'depth'>,
): Promise<string> {
  if (!isRemote(o.repo)) {
    const dotGit = join(o.repo, '.git');
    if (fs.existsSync(dotGit) && fs.statSync(dotGit).isFile()) {
      const { stdout } = await exec('git', ['-C', o.repo, 'rev-parse', '--path-format=absolute', '--git-common-dir'], {
        env: { ...process.env, ...o.env },
      });
      return stdout.trim();
    }
    return locateGitRepository(o.repo).gitdir;
  }
  const gitdir = join(o.cacheDir ?? defaultCacheRoot(o.env), createHash('sha256').update(o.repo).digest('hex'));
  if (!fs.existsSync(join(gitdir, 'HEAD')))
    await runGit(['init', '--quiet', '--bare', gitdir], o, 'creating the cache');
  await fetchRemote(
    gitdir,
    o.repo,
    ['+refs/notes/keystone*:refs/notes/keystone*', ROLLOUT_REFSPEC],
    o,
    'refs/notes/keystone*',
  );
  return gitdir;
}

/**
 * A linked work tree (`git worktree add`; `.git` is a file): isomorphic-git cannot follow it, so native git resolves
 * the commit (HEAD is the work tree's own), and the reading happens in the common directory, where the objects and
 * every notes ref live.
 */
async function openLinkedWorktree(o: OpenFleetRepositoryOptions, want: string): Promise<FleetRepository> {
  const ask = async (args: string[]) =>
    (await exec('git', ['-C', o.repo, ...args], { env: { ...process.env, ...o.env } })).stdout.trim();
  let common: string;
  try {
    common = await ask(['rev-parse', '--path-format=absolute', '--git-common-dir']);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new OperationError('KS_GIT_MISSING', 'a linked work tree needs the git command (not found on PATH)');
    throw new OperationError('KS_NOT_A_GIT_REPOSITORY', `${o.repo} is not a Git repository`);
  }
  try {
    return {
      gitdir: common,
      commit: await ask(['rev-parse', '--verify', '--quiet', '--end-of-options', `${want}^{commit}`]),
      label: want,
    };
  } catch {
    throw new UnknownRefError(`no ref or commit "${want}" in ${o.repo}`);
  }
}

function defaultCacheRoot(env: Record<string, string | undefined>): string {
  return join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache'), 'keystone', 'fleet');
}

async function fetchRemote(
  gitdir: string,
  url: string,
  refspecs: string[],
  o: OpenFleetRepositoryOptions,
  what: string,
): Promise<void> {
  const args = [
    '--git-dir',
    gitdir,
    'fetch',
    '--quiet',
    '--no-tags',
    '--prune',
    `--depth=${o.depth ?? 1}`,
    url,
    ...refspecs,
  ];
  try {
    await runGit(args, o, `fetching from ${redactUrl(url)}`);
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr ?? '';
    // The server answered, and has no such branch or commit: the input is wrong, not the remote.
    if (/couldn't find remote ref|not our ref|no such remote ref|unadvertised object/i.test(stderr))
      throw new UnknownRefError(`${redactUrl(url)} has no ref or commit "${what}"`);
    throw e;
  }
}

async function runGit(args: string[], o: OpenFleetRepositoryOptions, what: string): Promise<void> {
  // The token goes in through the environment (GIT_CONFIG_*), never the command line other users can read.
  const auth = o.token
    ? {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${o.token}`).toString('base64')}`,
      }
    : {};
  const env = { ...process.env, ...o.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', ...auth };
  try {
    await exec('git', args, { env, timeout: o.timeoutMs ?? 120_000, maxBuffer: 16 << 20 });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    if (err.code === 'ENOENT')
      throw new OperationError('KS_GIT_MISSING', 'keystonectl fleet status needs the git command (not found on PATH)');
    const stderr = redact(err.stderr ?? err.message, o.token).trim();
    const failure = new OperationError(
      'KS_FLEET_FETCH_FAILED',
      `${what}: ${stderr.split('\n').slice(-3).join(' / ') || 'git failed'}`,
    );
    throw Object.assign(failure, { stderr });
  }
}

const redact = (text: string, token?: string) => (token ? text.split(token).join('***') : text);

async function resolveOrThrow(gitdir: string, ref: string): Promise<string> {
  let oid: string;
  try {
    oid = await resolveCommit({ gitdir }, ref);
  } catch (e) {
    if ((e as { code?: string }).code === 'KS_GIT_REF_NOT_FOUND') throw new UnknownRefError((e as Error).message);
    throw e;
  }
  // A tag names a tag object: the commit is what it points at.
  const { object, type } = await git
    .readObject({ fs, gitdir, oid })
    .catch(() => ({ object: undefined, type: undefined }));
  if (type === 'tag') return (object as { object: string }).object;
  if (type !== 'commit') throw new UnknownRefError(`"${ref}" is not a commit`);
  return oid;
}

// Reading what the fleet view needs from a repository: the commit, its fleet.toml, and every device's reports.
//
// A local repository (a work tree or a bare one) is read as it is. A remote is brought into a bare cache repository
// of ours with ONE native `git fetch` of the branch and `+refs/notes/keystone*:refs/notes/keystone*`: every
// device's own notes ref and the shared ref of earlier agents, however many devices there are (SPEC §8), and the
// rollout refs beside them (SPEC §14; fleet-rollout-read.ts), which cost nothing where there are none. Native git,
// because isomorphic-git fetches one non-branch ref at a time, which would be one fetch per device. The fetch is
// shallow (--depth, default 1): a notes ref's tip commit carries, in its tree, every note that device ever wrote, and
// its message names the commit of its newest report, so the notes' history is never needed; the branch's history
// only tells an older commit from another one, and the ancestry search says "unknown" where it is cut off.
//
// A device's newest report is its notes ref's tip: the reporter writes the message `keystone/<device>: <state>
// <commit>` (git-notes-reporter.ts); when a tip's message says otherwise (a hand-made commit), the newest line of the
// device anywhere in the tip's tree stands in. The shared refs/notes/keystone gives the lines it holds on the commit
// viewed, for devices whose own ref has none (an upgrade loses nothing); it has no per-device tip to tell a newest
// report by, so a device known only from it and silent on this commit does not show.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import git, { Errors } from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import { UnknownRefError } from './unknown-ref-error.js';
import { FLEET_FILE } from '../core/fleet.js';
import { searchAncestor } from '../git/git-ancestry.js';
import { locateGitRepository, resolveCommit } from '../source/git-tree-reader.js';
import { statusContext } from '../report/commit-status.js';
import { DEVICE_NOTES_PREFIX, deviceOfNotesRef, LEGACY_NOTES_REF } from '../report/device-notes-ref.js';
import { ROLLOUT_REFSPEC } from './fleet-rollout-read.js';
import type { Ancestry, DeviceReport, DeviceReports } from './fleet-view-input.js';
import { CERTIFICATE_ENTRY } from '../report/note-commit.js';
import { noteAt, resolveRefIfAny } from '../report/notes-tree.js';
import { isCommitId } from '../git/commit-id.js';
import { redactUrl } from '../git/git-repo-location.js';
import { parseStatusNote, type StatusLine } from '../report/status-note.js';

export { UnknownRefError } from './unknown-ref-error.js';

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

// ---- what the view reads ----

export interface FleetReports {
  /** The committer time of the commit, ms. */
  commitTime: number;
  /** fleet.toml at the commit, or undefined when it has none. */
  fleetText?: string;
  reports: DeviceReports[];
  ancestry: Record<string, Ancestry>;
}

/**
 * The commit, its fleet file and the history come from `gitdir`; the notes from `notesGitdir`, which is the same
 * repository unless the fleet reports to a repository of its own (`keystone agent --status-repo`).
 */
export async function readFleetReports(gitdir: string, commit: string, notesGitdir = gitdir): Promise<FleetReports> {
  const cache = {};
  const { commit: c } = await git.readCommit({ fs, gitdir, oid: commit, cache });
  const fleetText = await readFleetFile(gitdir, commit);
  const reports: DeviceReports[] = [];
  const refs = (await git.listRefs({ fs, gitdir: notesGitdir, filepath: DEVICE_NOTES_PREFIX.replace(/\/$/, '') }))
    .map((r) => `${DEVICE_NOTES_PREFIX}${r}`)
    .sort();
  for (const ref of refs) {
    const device = deviceOfNotesRef(ref);
    const tip = await resolveRefIfAny(notesGitdir, ref);
    if (device === undefined || tip === undefined) continue;
    const context = statusContext(device);
    const onCommit = lineOf(await noteAt(notesGitdir, tip, commit), context, commit);
    const newest =
      (await newestFromMessage(notesGitdir, tip, context)) ?? (await newestInTree(notesGitdir, tip, context));
    reports.push({
      device,
      ...(onCommit && { onCommit }),
      ...(newest && { newest }),
      publishedCertificate: () => publishedCertificate(notesGitdir, tip),
    });
  }
  // Earlier agents' lines on this commit, for devices whose own ref has none.
  const legacyTip = await resolveRefIfAny(notesGitdir, LEGACY_NOTES_REF);
  const legacy = legacyTip === undefined ? undefined : await noteAt(notesGitdir, legacyTip, commit);
  for (const line of legacy === undefined ? [] : parseStatusNote(legacy)) {
    if (!line.context.startsWith('keystone/')) continue;
    const device = line.context.slice('keystone/'.length);
    const known = reports.find((r) => r.device === device);
    const report = toReport(line, commit);
    if (!known) reports.push({ device, onCommit: report, newest: report });
    else if (!known.onCommit) known.onCommit = report;
  }
  const ancestry: Record<string, Ancestry> = {};
  for (const r of reports) {
    const other = r.newest?.commit;
    if (other === undefined || other === commit || other in ancestry) continue;
    ancestry[other] = await relate(gitdir, commit, other, cache);
  }
  return { commitTime: c.committer.timestamp * 1000, ...(fleetText !== undefined && { fleetText }), reports, ancestry };
}

async function readFleetFile(gitdir: string, commit: string): Promise<string | undefined> {
  try {
    const { blob } = await git.readBlob({ fs, gitdir, oid: commit, filepath: FLEET_FILE });
    return Buffer.from(blob).toString('utf8');
  } catch (e) {
    if (e instanceof Errors.NotFoundError) return undefined;
    throw e;
  }
}

function toReport(line: StatusLine, commit: string): DeviceReport {
  return {
    commit,
    state: line.state,
    at: Date.parse(line.time),
    fields: line.fields,
    description: line.description,
    ...(line.log.length > 0 && { log: line.log }),
    ...(line.signature && { signature: line.signature }),
    signed: line.signed,
  };
}

/** The certificate a device publishes in its notes tree (note-commit.ts), if any and not oversized; read only when asked. */
async function publishedCertificate(gitdir: string, tip: string): Promise<string | undefined> {
  const { tree } = (await git.readCommit({ fs, gitdir, oid: tip })).commit;
  const entry = (await git.readTree({ fs, gitdir, oid: tree })).tree.find(
    (e) => e.path === CERTIFICATE_ENTRY && e.type === 'blob',
  );
  if (!entry) return undefined;
  const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid });
  return blob.length <= 16 * 1024 ? Buffer.from(blob).toString('utf8') : undefined;
}

function lineOf(note: string | undefined, context: string, commit: string): DeviceReport | undefined {
  const line = note === undefined ? undefined : parseStatusNote(note).find((l) => l.context === context);
  return line && toReport(line, commit);
}

/** The report the tip's message names (`keystone/<device>: <state> <commit>`), read from the tip's tree. */
async function newestFromMessage(gitdir: string, tip: string, context: string): Promise<DeviceReport | undefined> {
  const { message } = (await git.readCommit({ fs, gitdir, oid: tip })).commit;
  const m = /^(\S+): \S+ ([0-9a-f]{40})\s*$/.exec(message.split('\n', 1)[0] ?? '');
  if (!m || m[1] !== context) return undefined;
  return lineOf(await noteAt(gitdir, tip, m[2]!), context, m[2]!);
}

/** The device's newest line in every note of the tip's tree (flat or fanned out). */
async function newestInTree(gitdir: string, tip: string, context: string): Promise<DeviceReport | undefined> {
  let best: DeviceReport | undefined;
  const walk = async (tree: string, prefix: string): Promise<void> => {
    for (const e of (await git.readTree({ fs, gitdir, oid: tree })).tree) {
      const name = prefix + e.path;
      if (e.type === 'tree' && /^[0-9a-f]{2,38}$/.test(name)) await walk(e.oid, name);
      else if (e.type === 'blob' && isCommitId(name)) {
        const r = lineOf(
          Buffer.from((await git.readBlob({ fs, gitdir, oid: e.oid })).blob).toString('utf8'),
          context,
          name,
        );
        if (r && (best === undefined || r.at > best.at || Number.isNaN(best.at))) best = r;
      }
    }
  };
  await walk((await git.readCommit({ fs, gitdir, oid: tip })).commit.tree, '');
  return best;
}

/** `older` when `other` is an ancestor of `commit`, `newer` when a descendant; `unknown` where history is cut off. */
async function relate(gitdir: string, commit: string, other: string, cache: object): Promise<Ancestry> {
  const maxCommits = 2000;
  if ((await searchAncestor({ gitdir, tip: commit, ancestor: other, maxCommits, cache })).kind === 'found')
    return 'older';
  if ((await searchAncestor({ gitdir, tip: other, ancestor: commit, maxCommits, cache })).kind === 'found')
    return 'newer';
  return 'unknown';
}

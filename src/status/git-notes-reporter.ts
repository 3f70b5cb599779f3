// Commit statuses as Git notes under refs/notes/keystone (SPEC §8): works with any Git server, since a note is only
// a commit on another ref. One note per commit, one line per device; a device rewrites only its own line, so
// devices sharing a repository merge rather than clobber each other.
//
// For a remote, notes commits are built in a bare cache repository of our own: fetch the remote notes tip (it may not
// exist yet), read the commit's note, rewrite our line, commit with the fetched tip as parent, push. When another
// device pushed in between the push is not a fast-forward: fetch again and redo, a few times. The annotated commit
// never has to be present: a notes tree is keyed by the commit id, nothing more. isomorphic-git's addNote/readNote
// only know the flat layout, while git itself fans notes out (`ab/cdef…`) once there are many; so the tree is read
// and written here, keeping whichever layout a note already has.
//
// For a local repository path the note is written straight into that repository.
import { existsSync, statSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
import git, { Errors, type GitHttpRequest, type GitHttpResponse, type HttpClient, type TreeEntry } from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import { checkStatus, httpDeliveryError, StatusDeliveryError, type CommitStatus, type StatusReporter } from './commit-status.js';
import { mergeStatusNote, NOTES_REF } from './status-note.js';
import { headCompletingHttp } from '../source/git-head-advertisement.js';

export interface GitNotesReporterOptions {
  /** An http(s) URL of the remote, or the path of a local repository (work tree or bare). */
  repository: string;
  /** Remote only: the bare cache repository notes commits are built in (created when missing), e.g. `<state-dir>/notes.git`. */
  cacheDir?: string;
  /** Remote only: sent as Basic auth with the token as the password. */
  token?: string;
  /** Basic-auth user name sent with the token; default `x-access-token` (GitHub's; others ignore it). */
  username?: string;
  /** The outbox key; default `git-notes`. */
  name?: string;
  /** Per delivery (all its fetches and pushes); default 30 s. */
  timeoutMs?: number;
  /** Push attempts when another writer keeps moving the notes ref; default 5. */
  pushAttempts?: number;
  /** Author and committer of the notes commits; default `Keystone <keystone@localhost>`. */
  author?: { name: string; email: string };
  /** ms clock for the notes commit time; default Date.now. */
  now?: () => number;
}

/** Where to push notes commits when this ref is fetched: kept apart from our own refs/notes/keystone. */
const TRACKING_REF = 'refs/remotes/origin/notes-keystone';

export class GitNotesReporter implements StatusReporter {
  readonly name: string;
  private readonly remote: boolean;
  private readonly timeoutMs: number;
  private readonly pushAttempts: number;
  private readonly author: { name: string; email: string };
  private readonly now: () => number;
  /** One delivery at a time: each rewrites the same ref of the same cache. */
  private chain: Promise<unknown> = Promise.resolve();
  private cacheReady = false;

  constructor(private readonly opts: GitNotesReporterOptions) {
    this.name = opts.name ?? 'git-notes';
    this.remote = /^https?:\/\//i.test(opts.repository);
    if (this.remote && !opts.cacheDir) throw new Error('GitNotesReporter: a remote repository needs a cacheDir for the notes cache');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.pushAttempts = opts.pushAttempts ?? 5;
    this.author = opts.author ?? { name: 'Keystone', email: 'keystone@localhost' };
    this.now = opts.now ?? Date.now;
  }

  deliver(s: CommitStatus): Promise<void> {
    checkStatus(s);
    const run = this.chain.then(() => (this.remote ? this.deliverRemote(s) : this.deliverLocal(s)));
    this.chain = run.catch(() => undefined);
    return run;
  }

  // ---- local repository ----

  private async deliverLocal(s: CommitStatus): Promise<void> {
    const gitdir = localGitdir(this.opts.repository);
    if (!gitdir) throw new StatusDeliveryError('KS_STATUS_GIT_FAILED', `${this.opts.repository} is not a Git repository`);
    try {
      const tip = await resolveRef(gitdir, NOTES_REF);
      const next = await this.noteCommit(gitdir, tip, s);
      await git.writeRef({ fs, gitdir, ref: NOTES_REF, value: next, force: true });
    } catch (e) {
      throw this.gitError(`writing the note for ${s.commit.slice(0, 12)} in ${this.opts.repository}`, e);
    }
  }

  // ---- remote ----

  private async deliverRemote(s: CommitStatus): Promise<void> {
    const gitdir = this.opts.cacheDir as string;
    const what = `notes for ${s.commit.slice(0, 12)} at ${redactUrl(this.opts.repository)}`;
    const deadline = new Deadline(this.timeoutMs, what);
    try {
      await deadline.run(async () => {
        await this.prepareCache(gitdir);
        const http = timedHttpClient(deadline.signal);
        for (let attempt = 1; attempt <= this.pushAttempts; attempt++) {
          const tip = await this.fetchTip(gitdir, http);
          const next = await this.noteCommit(gitdir, tip, s);
          await git.writeRef({ fs, gitdir, ref: NOTES_REF, value: next, force: true });
          try {
            await git.push({ fs, http, gitdir, url: this.opts.repository, ref: NOTES_REF, remoteRef: NOTES_REF, headers: this.authHeaders() });
            return;
          } catch (e) {
            // Another device pushed since our fetch: isomorphic-git refuses (it cannot see the new tip as our
            // ancestor, or does not even have it), or the server does when the race is closer still.
            if (!isPushConflict(e)) throw e;
          }
        }
        throw new StatusDeliveryError('KS_STATUS_CONFLICT', `${what}: ${NOTES_REF} moved under us ${this.pushAttempts} times; will try again later`);
      });
    } catch (e) {
      throw this.gitError(what, e);
    }
  }

  private async prepareCache(gitdir: string): Promise<void> {
    if (this.cacheReady) return;
    if (!existsSync(join(gitdir, 'HEAD'))) await git.init({ fs, gitdir, bare: true });
    // fetch() records the remote tip through the remote's refspec, and refuses to fetch without one.
    await git.setConfig({ fs, gitdir, path: 'remote.origin.fetch', value: `+${NOTES_REF}:${TRACKING_REF}` });
    this.cacheReady = true;
  }

  /** The remote notes tip, its objects fetched into the cache; undefined when the remote has no notes yet. */
  private async fetchTip(gitdir: string, http: HttpClient): Promise<string | undefined> {
    // Ask for the ref first: absent means we start the notes history, and a tip we pushed ourselves needs no fetch.
    const refs = await git.listServerRefs({ http, url: this.opts.repository, prefix: NOTES_REF, headers: this.authHeaders() });
    const tip = refs.find((r) => r.ref === NOTES_REF)?.oid;
    if (tip === undefined || (await hasCommit(gitdir, tip))) return tip;
    const r = await git.fetch({
      fs,
      // A server whose HEAD names a missing branch advertises no HEAD, which isomorphic-git's fetch cannot do without.
      http: headCompletingHttp(http, NOTES_REF),
      gitdir,
      url: this.opts.repository,
      remote: 'origin',
      ref: NOTES_REF,
      remoteRef: NOTES_REF,
      singleBranch: true,
      tags: false,
      headers: this.authHeaders(),
    });
    // The ref may have moved since we listed it; either tip will do, the push finds out if it is stale.
    return r.fetchHead ?? tip;
  }

  private authHeaders(): Record<string, string> {
    if (!this.opts.token) return {};
    const basic = Buffer.from(`${this.opts.username ?? 'x-access-token'}:${this.opts.token}`).toString('base64');
    return { authorization: `Basic ${basic}` };
  }

  // ---- the notes commit ----

  /** A notes commit on top of `tip` whose tree has `s`'s line merged into the commit's note. */
  private async noteCommit(gitdir: string, tip: string | undefined, s: CommitStatus): Promise<string> {
    const tree = tip ? (await git.readCommit({ fs, gitdir, oid: tip })).commit.tree : undefined;
    const existing = tree ? await findNote(gitdir, tree, s.commit) : undefined;
    const blob = await git.writeBlob({ fs, gitdir, blob: Buffer.from(mergeStatusNote(existing, s), 'utf8') });
    const newTree = await setNote(gitdir, tree, s.commit, blob);
    const sig = { ...this.author, timestamp: Math.floor(this.now() / 1000), timezoneOffset: 0 };
    return git.writeCommit({
      fs,
      gitdir,
      commit: { message: `${s.context}: ${s.state} ${s.commit}\n`, tree: newTree, parent: tip ? [tip] : [], author: sig, committer: sig },
    });
  }

  /** Coded, and without the token whatever the library put in its message. */
  private gitError(what: string, e: unknown): StatusDeliveryError {
    if (e instanceof StatusDeliveryError) return new StatusDeliveryError(e.code, this.redact(e.message), e.data, { cause: e.cause });
    const detail = this.redact(e instanceof Error ? e.message : String(e));
    if (e instanceof Errors.HttpError) return httpDeliveryError(what, e.data.statusCode, this.redact(e.data.statusMessage));
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|UND_ERR_\w+)$/.test(code))
      return new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${code}`, {});
    if (e instanceof Errors.SmartHttpError || e instanceof Errors.UserCanceledError)
      return new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${detail}`, {});
    return new StatusDeliveryError('KS_STATUS_GIT_FAILED', `${what}: ${detail}`, {});
  }

  private redact(text: string): string {
    const t = this.opts.token;
    return t ? text.split(t).join('***') : text;
  }
}

// ---- notes trees, flat or fanned out ----

/** The note for `rest` under `tree`: `rest` itself, or `rest[0..2]/…` recursively (git's fanout). */
async function findNote(gitdir: string, tree: string, rest: string): Promise<string | undefined> {
  const entries = (await git.readTree({ fs, gitdir, oid: tree })).tree;
  const flat = entries.find((e) => e.path === rest && e.type === 'blob');
  if (flat) return Buffer.from((await git.readBlob({ fs, gitdir, oid: flat.oid })).blob).toString('utf8');
  const sub = entries.find((e) => e.path === rest.slice(0, 2) && e.type === 'tree');
  return sub && rest.length > 2 ? findNote(gitdir, sub.oid, rest.slice(2)) : undefined;
}

/** `tree` with the note for `rest` set to `blob`, where it already is, else flat at this level. Returns the new tree. */
async function setNote(gitdir: string, tree: string | undefined, rest: string, blob: string): Promise<string> {
  const entries: TreeEntry[] = tree ? (await git.readTree({ fs, gitdir, oid: tree })).tree.map((e) => ({ ...e })) : [];
  const flat = entries.find((e) => e.path === rest && e.type === 'blob');
  const sub = entries.find((e) => e.path === rest.slice(0, 2) && e.type === 'tree');
  if (flat) flat.oid = blob;
  else if (sub && rest.length > 2 && (await findNote(gitdir, sub.oid, rest.slice(2))) !== undefined) sub.oid = await setNote(gitdir, sub.oid, rest.slice(2), blob);
  else entries.push({ mode: '100644', path: rest, oid: blob, type: 'blob' });
  return git.writeTree({ fs, gitdir, tree: entries });
}

// ---- helpers ----

async function resolveRef(gitdir: string, ref: string): Promise<string | undefined> {
  try {
    return await git.resolveRef({ fs, gitdir, ref });
  } catch (e) {
    if (e instanceof Errors.NotFoundError) return undefined;
    throw e;
  }
}

async function hasCommit(gitdir: string, oid: string): Promise<boolean> {
  try {
    await git.readCommit({ fs, gitdir, oid });
    return true;
  } catch {
    return false;
  }
}

/** `<path>/.git` for a work tree, `<path>` for a bare repository, undefined for anything else. */
function localGitdir(path: string): string | undefined {
  const dotGit = join(path, '.git');
  if (existsSync(dotGit) && statSync(dotGit).isDirectory()) return dotGit;
  if (existsSync(join(path, 'HEAD')) && existsSync(join(path, 'objects'))) return path;
  return undefined;
}

function isPushConflict(e: unknown): boolean {
  return e instanceof Errors.PushRejectedError || e instanceof Errors.GitPushError || e instanceof Errors.NotFoundError;
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) u.username = u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/** Bounds one delivery: aborts its requests, and gives up on the library if it does not notice the abort. */
class Deadline {
  private readonly controller = new AbortController();
  constructor(
    private readonly ms: number,
    private readonly what: string,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async run<T>(op: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${this.what}: no answer within ${this.ms} ms`);
        this.controller.abort(e);
        reject(e);
      }, this.ms);
    });
    try {
      return await Promise.race([op(), expired]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function timedHttpClient(signal: AbortSignal): HttpClient {
  return {
    request: (req: GitHttpRequest): Promise<GitHttpResponse> => nodeHttp.request({ ...req, signal }),
  };
}

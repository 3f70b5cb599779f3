// Commit statuses as Git notes (SPEC §8): works with any Git server, since a note is only a commit on another ref.
// Each device writes its own notes ref, refs/notes/keystone-devices/<device> (see device-notes-ref.ts for the name
// and why it is not under refs/notes/keystone/), and no other: however many devices report on one commit at once,
// no push ever races another device's. Plain git shows them together: `git log --notes='keystone*'`.
//
// For a remote, notes commits are built in a bare cache repository of our own (`<state-dir>/notes.git`), on top of
// this device's own last notes commit kept there: since only we write that ref, the server's copy is that commit or
// an older one, so a report is one push (the ref advertisement and the receive-pack POST) and no fetch. The push is
// refused only when the server holds a tip we do not have (the cache was wiped, or another agent runs under the same
// device name): then we fetch that one ref, rebuild on it, and push again. The shared refs/notes/keystone of
// earlier agents is never written (status-notes-read.ts reads it for history).
//
// For a local repository path the note is written straight into that repository, on the same per-device ref.
import { existsSync, statSync } from 'node:fs';
import * as fs from 'node:fs';
import { join } from 'node:path';
import git, { Errors, type GitHttpRequest, type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import { checkStatus, httpDeliveryError, StatusDeliveryError, type CommitStatus, type StatusReporter } from './commit-status.js';
import { headCompletingHttp } from '../source/git-head-advertisement.js';
import { gitHttpAgent } from '../source/git-http-agent.js';
import { DEVICE_NOTES_PREFIX, deviceNotesRef, deviceOfContext } from './device-notes-ref.js';
import { findNote, resolveRefIfAny, setNote } from './notes-tree.js';
import { redactUrl } from '../source/git-repo-location.js';
import { mergeStatusNote } from './status-note.js';

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
  /** Push attempts when the server holds a tip of this device's ref that the cache lacks; default 5. */
  pushAttempts?: number;
  /** Author and committer of the notes commits; default `Keystone <keystone@localhost>`. */
  author?: { name: string; email: string };
  /** ms clock for the notes commit time; default Date.now. */
  now?: () => number;
}

/** Where fetch() records a device ref's remote tip: kept apart from the ref we build on. */
const TRACKING_PREFIX = 'refs/remotes/origin/keystone-devices/';

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
    const ref = deviceNotesRef(deviceOfContext(s.context));
    try {
      const tip = await resolveRefIfAny(gitdir, ref);
      await git.writeRef({ fs, gitdir, ref, value: await this.noteCommit(gitdir, tip, s), force: true });
    } catch (e) {
      throw this.gitError(`writing the note for ${s.commit.slice(0, 12)} in ${this.opts.repository}`, e);
    }
  }

  // ---- remote ----

  private async deliverRemote(s: CommitStatus): Promise<void> {
    const gitdir = this.opts.cacheDir as string;
    const ref = deviceNotesRef(deviceOfContext(s.context));
    const what = `notes for ${s.commit.slice(0, 12)} at ${redactUrl(this.opts.repository)}`;
    const deadline = new Deadline(this.timeoutMs, what);
    try {
      await deadline.run(async () => {
        await this.prepareCache(gitdir);
        const http = timedHttpClient(deadline.signal);
        // Our own last notes commit: in the steady state the server has exactly it, so no fetch is needed.
        let tip = await resolveRefIfAny(gitdir, ref);
        for (let attempt = 1; attempt <= this.pushAttempts; attempt++) {
          const next = await this.noteCommit(gitdir, tip, s);
          // Written before the push: a push that fails keeps the line locally, and the next report carries it.
          await git.writeRef({ fs, gitdir, ref, value: next, force: true });
          try {
            await git.push({ fs, http, gitdir, url: this.opts.repository, ref, remoteRef: ref, headers: this.authHeaders() });
            return;
          } catch (e) {
            // The server's tip is not our ancestor (isomorphic-git refuses, or lacks the object to tell), or the
            // server refused: take the server's tip of this one ref and build on it.
            if (!isPushConflict(e)) throw e;
          }
          // Absent there (it refused for another reason, or lost the ref): keep building on ours.
          tip = (await this.fetchTip(gitdir, http, ref)) ?? tip;
        }
        throw new StatusDeliveryError('KS_STATUS_CONFLICT', `${what}: ${ref} moved under us ${this.pushAttempts} times (another agent with this device name?); will try again later`);
      });
    } catch (e) {
      throw this.gitError(what, e);
    }
  }

  private async prepareCache(gitdir: string): Promise<void> {
    if (this.cacheReady) return;
    if (!existsSync(join(gitdir, 'HEAD'))) await git.init({ fs, gitdir, bare: true });
    // fetch() records the remote tip through the remote's refspec, and refuses to fetch without one.
    await git.setConfig({ fs, gitdir, path: 'remote.origin.fetch', value: `+${DEVICE_NOTES_PREFIX}*:${TRACKING_PREFIX}*` });
    this.cacheReady = true;
  }

  /** The server's tip of `ref`, its objects fetched into the cache; undefined when the server has no such ref. */
  private async fetchTip(gitdir: string, http: HttpClient, ref: string): Promise<string | undefined> {
    try {
      // A server whose HEAD names a missing branch advertises no HEAD, which isomorphic-git's fetch cannot do without.
      const r = await git.fetch({ fs, http: headCompletingHttp(http, ref), gitdir, url: this.opts.repository, remote: 'origin', ref, remoteRef: ref, singleBranch: true, tags: false, headers: this.authHeaders() });
      return r.fetchHead ?? undefined;
    } catch (e) {
      if (e instanceof Errors.NotFoundError) return undefined; // gone meanwhile (a server restored from a backup): start it again
      throw e;
    }
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

// ---- helpers ----


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
    request: (req: GitHttpRequest): Promise<GitHttpResponse> => nodeHttp.request({ ...req, signal, agent: gitHttpAgent(req.url) }),
  };
}

// Commit statuses as Git notes (SPEC §8): works with any Git server, since a note is only a commit on another ref.
// Each device writes its own notes ref, refs/notes/keystone-devices/<device> (see device-notes-ref.ts for the name
// and why it is not under refs/notes/keystone/), and no other: however many devices report on one commit at once,
// no push ever races another device's. Plain git shows them together: `git log --notes='keystone*'`. With a staged
// rollout (SPEC §14) a status also carries the device's rollout ref for the commit (rollout-refs.ts), pointing at the
// notes commit, and the device deletes its rollout refs of commits it no longer keeps: all in the same push.
//
// For a remote, notes commits are built in a bare cache repository of our own (`<state-dir>/notes.git`), on top of
// this device's own last notes commit kept there. Since only we write this device's refs, the cache also knows their
// values on the server: the notes ref's as last pushed or fetched (under refs/remotes/origin/keystone-devices/), the
// rollout refs' under their own names. So a report is one request, a receive-pack POST that names each ref's old
// value (receive-pack-push.ts), without the ref advertisement, which lists every ref of the repository and grows
// with the fleet (docs/fleet-scale.md). The server refuses a ref whose old value is not what it holds (the cache was
// wiped or is from an older agent, a push went through but its answer was lost, another agent runs under the same
// device name): only then do we ask the server (one receive-pack advertisement, and the notes ref fetched when its
// tip is not ours), rebuild on what it holds, and push again. The shared refs/notes/keystone of earlier agents is
// never written (status-notes-read.ts reads it for history).
//
// For a local repository path the note and the rollout refs are written straight into that repository.
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
import { pushRefs, receivePackRefs, ZERO_OID, type RefUpdate, type RefUpdateResult } from './receive-pack-push.js';
import { parseRolloutRef, ROLLOUT_PREFIX, rolloutRef } from './rollout-refs.js';
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
  /** Push attempts when the server holds other values of this device's refs than the cache says; default 5. */
  pushAttempts?: number;
  /** Author and committer of the notes commits; default `Keystone <keystone@localhost>`. */
  author?: { name: string; email: string };
  /** ms clock for the notes commit time; default Date.now. */
  now?: () => number;
}

/**
 * The server's value of a device's notes ref as last seen (pushed, fetched or advertised): the `old` of the next push.
 * Kept apart from the ref we build on, which runs ahead of the server while a push fails. fetch() writes it too.
 */
const TRACKING_PREFIX = 'refs/remotes/origin/keystone-devices/';

/** In the notes cache: the seq of the newest status whose rollout refs were pushed (see current()). */
const ROLLOUT_SEQ_FILE = 'keystone-rollout-seq';

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
  /** The seq of the newest status whose rollout refs were written (persisted in the cache for a remote). */
  private rolloutSeq?: number;

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
    const device = deviceOfContext(s.context);
    const ref = deviceNotesRef(device);
    try {
      const tip = await resolveRefIfAny(gitdir, ref);
      const next = await this.noteCommit(gitdir, tip, s);
      await git.writeRef({ fs, gitdir, ref, value: next, force: true });
      const staged = await this.current(s, undefined);
      if (!staged.rollout) return;
      const own = await rolloutRefsOf(gitdir, device);
      for (const u of rolloutUpdates(staged, device, next, own)) {
        if (u.new === ZERO_OID) await git.deleteRef({ fs, gitdir, ref: u.ref });
        else await git.writeRef({ fs, gitdir, ref: u.ref, value: u.new, force: true });
      }
      await this.wroteRollout(staged, undefined);
    } catch (e) {
      throw this.gitError(`writing the note for ${s.commit.slice(0, 12)} in ${this.opts.repository}`, e);
    }
  }

  // ---- remote ----

  private async deliverRemote(s: CommitStatus): Promise<void> {
    const gitdir = this.opts.cacheDir as string;
    const device = deviceOfContext(s.context);
    const ref = deviceNotesRef(device);
    const tracking = `${TRACKING_PREFIX}${ref.slice(DEVICE_NOTES_PREFIX.length)}`;
    const what = `notes for ${s.commit.slice(0, 12)} at ${redactUrl(this.opts.repository)}`;
    const deadline = new Deadline(this.timeoutMs, what);
    try {
      await deadline.run(async () => {
        await this.prepareCache(gitdir);
        s = await this.current(s, gitdir);
        const remote = { url: this.opts.repository, headers: this.authHeaders(), signal: deadline.signal };
        // Our own last notes commit, and what the server holds of our refs: in the steady state the server has
        // exactly that, so the push needs nothing else. A cache of an earlier agent has no tracking ref: its pushes
        // left the server at our tip.
        let base = await resolveRefIfAny(gitdir, ref);
        let serverNotes = (await resolveRefIfAny(gitdir, tracking)) ?? base;
        let serverRollout = await rolloutRefsOf(gitdir, device);
        let next: string | undefined;
        let moved: string[] = [];
        for (let attempt = 1; attempt <= this.pushAttempts; attempt++) {
          if (next === undefined) {
            next = await this.noteCommit(gitdir, base, s);
            // Written before the push: a push that fails keeps the line locally, and the next report carries it.
            await git.writeRef({ fs, gitdir, ref, value: next, force: true });
          }
          const updates: RefUpdate[] = [];
          if (serverNotes !== next) updates.push({ ref, old: serverNotes ?? ZERO_OID, new: next });
          if (s.rollout) updates.push(...rolloutUpdates(s, device, next, serverRollout));
          if (updates.length === 0) return await this.wroteRollout(s, gitdir); // all there already (a push whose answer was lost)
          const results = await pushRefs({ ...remote, gitdir, updates });
          // What went through is on the server now, whatever happened to the rest.
          for (const [i, r] of results.entries()) {
            if (r.status !== 'ok') continue;
            const u = updates[i] as RefUpdate;
            if (u.ref === ref) {
              serverNotes = u.new;
              await git.writeRef({ fs, gitdir, ref: tracking, value: u.new, force: true });
            } else serverRollout = await this.recordRollout(gitdir, serverRollout, u.ref, u.new);
          }
          const refused = results.filter((r): r is Exclude<RefUpdateResult, { status: 'ok' }> => r.status !== 'ok');
          if (refused.length === 0) return await this.wroteRollout(s, gitdir);
          // With the server's words (failed to lock, stale info, missing objects): what moved, or what else refused it.
          moved = refused.map((r) => `${r.ref} (${r.reason})`);
          const rejected = refused.find((r) => r.status === 'rejected');
          if (rejected) throw new StatusDeliveryError('KS_STATUS_REJECTED', `${what}: the server refused ${rejected.ref}: ${rejected.reason}`);
          if (attempt === this.pushAttempts) break;
          // Stale: the server holds other values than we thought. Learn them, and rebuild only what needs it.
          const held = await receivePackRefs({ ...remote, wanted: (r) => r === ref || parseRolloutRef(r)?.device === device });
          for (const [r, oid] of serverRollout) if (held.get(r) !== oid) serverRollout = await this.recordRollout(gitdir, serverRollout, r, held.get(r));
          for (const [r, oid] of held) if (r !== ref && serverRollout.get(r) !== oid) serverRollout = await this.recordRollout(gitdir, serverRollout, r, oid);
          const theirs = held.get(ref);
          if (theirs === serverNotes) continue;
          if (theirs === undefined || theirs === next || (await isAncestor(gitdir, theirs, next))) {
            // Lost there (a server restored from a backup), or behind our tip: push ours on top of what it holds.
            serverNotes = theirs;
            if (theirs === undefined) await git.deleteRef({ fs, gitdir, ref: tracking });
            else await git.writeRef({ fs, gitdir, ref: tracking, value: theirs, force: true });
            continue;
          }
          // A tip we do not have, or not behind ours: take it and build on it.
          const fetched = await this.fetchTip(gitdir, timedHttpClient(deadline.signal), ref);
          serverNotes = fetched;
          if (fetched !== undefined) {
            base = fetched;
            next = undefined;
          }
        }
        throw new StatusDeliveryError('KS_STATUS_CONFLICT', `${what}: ${moved.join(', ')} moved under us ${this.pushAttempts} times (another agent with this device name?); will try again later`);
      });
    } catch (e) {
      const err = this.gitError(what, e);
      if (!damagedCache(e)) throw err;
      // An object the cache holds cannot be read (an agent killed while writing it: isomorphic-git does not fsync).
      // Every retry would fail alike, and the status never arrive: the cache goes, and the next attempt builds on the
      // server's tip again (what was pushed is there; what was not waits in the outbox). Found by `npm run chaos`.
      await fs.promises.rm(gitdir, { recursive: true, force: true });
      this.cacheReady = false;
      throw new StatusDeliveryError(err.code, `${err.message}; the local notes cache was damaged and is rebuilt at the next attempt`, err.data, { cause: e });
    }
  }

  /**
   * The status as far as this reporter acts on it: without its rollout part when a newer status (a higher seq) has
   * written this device's rollout refs already. The outbox retries per commit, so a `held` of an older commit can
   * arrive after the newer commit's `success`: written then, it would bring back a ref the device has moved past
   * and delete the success other devices' gates count.
   */
  private async current(s: CommitStatus, cacheDir: string | undefined): Promise<CommitStatus> {
    if (!s.rollout || s.seq === undefined) return s;
    if (this.rolloutSeq === undefined && cacheDir !== undefined) {
      const text = await fs.promises.readFile(join(cacheDir, ROLLOUT_SEQ_FILE), 'utf8').catch(() => '');
      if (/^\d+\n?$/.test(text)) this.rolloutSeq = Number(text);
    }
    if (this.rolloutSeq !== undefined && s.seq < this.rolloutSeq) return { ...s, rollout: undefined };
    return s;
  }

  private async wroteRollout(s: CommitStatus, cacheDir: string | undefined): Promise<void> {
    if (!s.rollout || s.seq === undefined) return;
    this.rolloutSeq = Math.max(this.rolloutSeq ?? 0, s.seq);
    if (cacheDir !== undefined) await fs.promises.writeFile(join(cacheDir, ROLLOUT_SEQ_FILE), `${this.rolloutSeq}\n`);
  }

  /** Records the server's value of one of our rollout refs in the cache (undefined: it has none); returns the new map. */
  private async recordRollout(gitdir: string, known: ReadonlyMap<string, string>, ref: string, oid: string | undefined): Promise<Map<string, string>> {
    const next = new Map(known);
    if (oid === undefined || oid === ZERO_OID) {
      next.delete(ref);
      await git.deleteRef({ fs, gitdir, ref });
    } else {
      next.set(ref, oid);
      // Only an id: the object need not be in the cache, since the push uses it as an old value and nothing reads it.
      await git.writeRef({ fs, gitdir, ref, value: oid, force: true });
    }
    return next;
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
    if (e instanceof StatusDeliveryError) {
      const message = e.message.startsWith(what) ? e.message : `${what}: ${e.message}`;
      return new StatusDeliveryError(e.code, this.redact(message), e.data, { cause: e.cause });
    }
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

/** This device's rollout refs in `gitdir`, any wave, with their values. */
async function rolloutRefsOf(gitdir: string, device: string): Promise<Map<string, string>> {
  const refs = new Map<string, string>();
  for (const rest of await git.listRefs({ fs, gitdir, filepath: ROLLOUT_PREFIX.replace(/\/$/, '') })) {
    const ref = `${ROLLOUT_PREFIX}${rest}`;
    if (parseRolloutRef(ref)?.device !== device) continue;
    const oid = await resolveRefIfAny(gitdir, ref);
    if (oid !== undefined) refs.set(ref, oid);
  }
  return refs;
}

/**
 * The rollout ref updates of a status, given this device's rollout refs as they stand (`own`): its ref for this
 * commit set to the notes commit `next`, and deleted every other one whose commit it does not keep. Its refs for
 * this commit in another state or wave go too: one state per device and commit, or a reader could count it twice.
 */
function rolloutUpdates(s: CommitStatus, device: string, next: string, own: ReadonlyMap<string, string>): RefUpdate[] {
  if (!s.rollout) return [];
  const { wave, state, keep } = s.rollout;
  const target = rolloutRef({ wave, device, commit: s.commit, state });
  const updates: RefUpdate[] = [];
  if (own.get(target) !== next) updates.push({ ref: target, old: own.get(target) ?? ZERO_OID, new: next });
  for (const [ref, oid] of own) {
    const commit = parseRolloutRef(ref)?.commit;
    if (ref !== target && (commit === s.commit || !keep.includes(commit as string))) updates.push({ ref, old: oid, new: ZERO_OID });
  }
  return updates;
}

/** Whether `ancestor` is behind `tip` in the cache; false when the cache lacks it (it cannot be ours then). */
async function isAncestor(gitdir: string, ancestor: string, tip: string): Promise<boolean> {
  try {
    await git.readCommit({ fs, gitdir, oid: ancestor });
    return await git.isDescendent({ fs, gitdir, oid: tip, ancestor, depth: -1 });
  } catch (e) {
    if (e instanceof Errors.NotFoundError || e instanceof Errors.ObjectTypeError) return false;
    throw e;
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
    request: (req: GitHttpRequest): Promise<GitHttpResponse> => nodeHttp.request({ ...req, signal, agent: gitHttpAgent(req.url) }),
  };
}

/** An error that says the cache's own objects are unreadable (truncated or corrupt), not that the server refused. */
function damagedCache(e: unknown): boolean {
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 5; x = (x as { cause?: unknown }).cause, depth++)
    if (/Invalid compressed buffer|incorrect header check|unexpected end of file|invalid (?:stored block lengths|distance|code)|an object is missing from|SHA check failed|Z_(?:BUF|DATA)_ERROR/i.test(x.message))
      return true;
  return false;
}

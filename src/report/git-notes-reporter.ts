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
// That fetch is bounded (notes-fetch.ts): anyone who can push can put a notes commit of any size on this device's
// ref. One past the limits is not read: this device's line replaces it, started afresh (a root commit) from the notes
// the cache holds, since the ref is this device's alone; the outbox logs that it did (issue 28, docs/fleet-reports.md).
// A server that lost the ref gets the same fresh start. The cache itself is kept small (notes-cache-bound.ts): only
// the tip the server holds, and what was written since.
//
// For a local repository path the note and the rollout refs are written straight into that repository (local-note.ts).
import * as fs from 'node:fs';
import git from 'isomorphic-git';
import {
  checkStatus,
  isStatusDeliveryError,
  StatusDeliveryError,
  type CommitStatus,
  type DeliveryNotice,
  type StatusReporter,
} from './commit-status.js';
import { deliveryError, redact } from './delivery-error.js';
import { damagedCache, Deadline } from './delivery-deadline.js';
import { DEVICE_NOTES_PREFIX, deviceNotesRef, deviceOfContext } from './device-notes-ref.js';
import type { GitNotesReporterOptions } from './git-notes-reporter-options.js';
import { deliverLocalNote } from './local-note.js';
import { NotesCacheBound } from './notes-cache-bound.js';
import { initNotesCache, notReplaced, recordRollout, TRACKING_PREFIX } from './notes-cache-refs.js';
import { DEFAULT_NOTES_FETCH_LIMITS, fetchNotesTip, type NotesFetchLimits } from './notes-fetch.js';
import { isAncestor, noteCommit, type NoteCommitOptions } from './note-commit.js';
import { resolveRefIfAny } from './notes-tree.js';
import { pushRefs, receivePackRefs, ZERO_OID, type RefUpdate, type RefUpdateResult } from './receive-pack-push.js';
import { parseRolloutRef } from './rollout-refs.js';
import { RolloutSeq } from './rollout-seq.js';
import { rolloutRefsOf, rolloutUpdates } from './rollout-updates.js';
import { redactUrl } from '../git/git-repo-location.js';

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
  /** Which status last wrote the rollout refs (rollout-seq.ts). */
  private readonly rollouts = new RolloutSeq();
  private readonly fetchLimits: NotesFetchLimits;
  private readonly bound: NotesCacheBound;
  /** The server's tip of our notes ref last refused as too large, and why: not fetched again while it stays. */
  private refusedTip?: { oid: string; error: StatusDeliveryError };

  constructor(private readonly opts: GitNotesReporterOptions) {
    this.name = opts.name ?? 'git-notes';
    this.remote = /^https?:\/\//i.test(opts.repository);
    if (this.remote && !opts.cacheDir)
      throw new Error('GitNotesReporter: a remote repository needs a cacheDir for the notes cache');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.pushAttempts = opts.pushAttempts ?? 5;
    this.author = opts.author ?? { name: 'Keystone', email: 'keystone@localhost' };
    this.now = opts.now ?? Date.now;
    this.fetchLimits = { ...DEFAULT_NOTES_FETCH_LIMITS, ...opts.fetchLimits };
    this.bound = new NotesCacheBound(opts.cacheBound);
  }

  deliver(s: CommitStatus): Promise<void | DeliveryNotice> {
    checkStatus(s);
    const run = this.chain.then((): Promise<void | DeliveryNotice> =>
      this.remote ? this.deliverRemote(s) : deliverLocalNote(this.opts, this.rollouts, s, () => this.signature()),
    );
    this.chain = run.catch(() => undefined);
    return run;
  }

  // ---- remote ----

  private async deliverRemote(s: CommitStatus): Promise<DeliveryNotice | undefined> {
    const gitdir = this.opts.cacheDir as string;
    const device = deviceOfContext(s.context);
    const ref = deviceNotesRef(device);
    const tracking = `${TRACKING_PREFIX}${ref.slice(DEVICE_NOTES_PREFIX.length)}`;
    const what = `notes for ${s.commit.slice(0, 12)} at ${redactUrl(this.opts.repository)}`;
    const deadline = new Deadline(this.timeoutMs, what);
    let notice: DeliveryNotice | undefined;
    try {
      notice = await deadline.run(() =>
        this.pushNote(s, { gitdir, device, ref, tracking, what, signal: deadline.signal }),
      );
    } catch (e) {
      const err = deliveryError(what, e, this.opts.token);
      if (!damagedCache(e)) throw err;
      // An object the cache holds cannot be read (an agent killed while writing it: isomorphic-git does not fsync).
      // Every retry would fail alike, and the status never arrive: the cache goes, and the next attempt builds on the
      // server's tip again (what was pushed is there; what was not waits in the outbox). Found by `npm run chaos`.
      await fs.promises.rm(gitdir, { recursive: true, force: true });
      this.cacheReady = false;
      throw new StatusDeliveryError(
        err.code,
        `${err.message}; the local notes cache was damaged and is rebuilt at the next attempt`,
        err.data,
        { cause: e },
      );
    }
    // Outside the deadline: a compaction cut short by it would go on beside the next delivery.
    try {
      await this.bound.after(gitdir, ref, tracking);
    } catch (e) {
      const detail = redact(e instanceof Error ? e.message : String(e), this.opts.token);
      return (
        notice ?? {
          code: 'KS_STATUS_GIT_FAILED',
          message: `the status was delivered, but compacting the notes cache ${gitdir} failed: ${detail}`,
        }
      );
    }
    return notice;
  }

  /** One delivery to a remote: the notes commit built, pushed with the rollout refs, and rebuilt while the push is stale. */
  private async pushNote(
    s: CommitStatus,
    c: { gitdir: string; device: string; ref: string; tracking: string; what: string; signal: AbortSignal },
  ): Promise<DeliveryNotice | undefined> {
    const { gitdir, device, ref, tracking, what } = c;
    await this.prepareCache(gitdir);
    s = await this.rollouts.current(s, gitdir);
    const remote = { url: this.opts.repository, headers: this.authHeaders(), signal: c.signal };
    // Our own last notes commit, and what the server holds of our refs: in the steady state the server has exactly
    // that, so the push needs nothing else. A cache of an earlier agent has no tracking ref: its pushes left the server
    // at our tip.
    let base = await resolveRefIfAny(gitdir, ref);
    let serverNotes = (await resolveRefIfAny(gitdir, tracking)) ?? base;
    let serverRollout = await rolloutRefsOf(gitdir, device);
    let next: string | undefined;
    let moved: string[] = [];
    // `afresh`: the next notes commit is a root (the server holds none of our line, or a tip we will not read);
    // `replacing`: why the server's tip is not read, when that is so.
    let afresh = false;
    let replacing: StatusDeliveryError | undefined;
    const done = async () => {
      await this.rollouts.wroteRollout(s, gitdir);
      if (!replacing) return undefined;
      return {
        code: replacing.code,
        message: `${what}: this device's notes ref on the server was replaced by its own line, started afresh from the notes it keeps: ${replacing.message}`,
      };
    };
    for (let attempt = 1; attempt <= this.pushAttempts; attempt++) {
      if (next === undefined) {
        next = await noteCommit(gitdir, base, s, { ...this.signature(), root: afresh });
        // Written before the push: a push that fails keeps the line locally, and the next report carries it.
        await git.writeRef({ fs, gitdir, ref, value: next, force: true });
      }
      const updates: RefUpdate[] = [];
      if (serverNotes !== next) updates.push({ ref, old: serverNotes ?? ZERO_OID, new: next });
      if (s.rollout) updates.push(...rolloutUpdates(s, device, next, serverRollout, this.opts.signer));
      if (updates.length === 0) return done(); // all there already (a push whose answer was lost)
      const results = await pushRefs({ ...remote, gitdir, updates });
      // What went through is on the server now, whatever happened to the rest.
      for (const [i, r] of results.entries()) {
        if (r.status !== 'ok') continue;
        const u = updates[i] as RefUpdate;
        if (u.ref === ref) {
          serverNotes = u.new;
          await git.writeRef({ fs, gitdir, ref: tracking, value: u.new, force: true });
        } else serverRollout = await recordRollout(gitdir, serverRollout, u.ref, u.new);
      }
      const refused = results.filter((r): r is Exclude<RefUpdateResult, { status: 'ok' }> => r.status !== 'ok');
      if (refused.length === 0) return done();
      // With the server's words (failed to lock, stale info, missing objects): what moved, or what else refused it.
      moved = refused.map((r) => `${r.ref} (${r.reason})`);
      const rejected = refused.find((r) => r.status === 'rejected');
      const refusal =
        rejected &&
        new StatusDeliveryError(
          'KS_STATUS_REJECTED',
          `${what}: the server refused ${rejected.ref}: ${rejected.reason}`,
        );
      // The notes ref refused for good may yet be a stale guess: a hook that refuses what does not descend from the
      // tip it holds (a rule against force pushes) answers before the server compares `old`. The server is asked.
      if (refusal && rejected?.ref !== ref) throw refusal;
      if (attempt === this.pushAttempts && !refusal) break;
      // Stale: the server holds other values than we thought. Learn them, and rebuild only what needs it.
      const held = await receivePackRefs({
        ...remote,
        wanted: (r) => r === ref || parseRolloutRef(r)?.device === device,
      });
      for (const [r, oid] of serverRollout)
        if (held.get(r) !== oid) serverRollout = await recordRollout(gitdir, serverRollout, r, held.get(r));
      for (const [r, oid] of held)
        if (r !== ref && serverRollout.get(r) !== oid)
          serverRollout = await recordRollout(gitdir, serverRollout, r, oid);
      const theirs = held.get(ref);
      if (theirs === serverNotes) {
        // Refused although it named what the server holds: a server that will not replace a tip (non-fast-forward).
        if (replacing) throw notReplaced(replacing, ref, moved);
        if (refusal) throw refusal;
        continue;
      }
      if (attempt === this.pushAttempts) break;
      if (theirs === undefined) {
        // Lost there (a server restored from a backup): our notes go again, as a new root. The cache keeps no history
        // to push on top of nothing (notes-cache-bound.ts), and readers need only the tip.
        serverNotes = undefined;
        await git.deleteRef({ fs, gitdir, ref: tracking });
        if (!afresh) [afresh, next] = [true, undefined];
        continue;
      }
      if (theirs === next || (await isAncestor(gitdir, theirs, next))) {
        // Behind our tip: push ours on top of what it holds.
        serverNotes = theirs;
        await git.writeRef({ fs, gitdir, ref: tracking, value: theirs, force: true });
        continue;
      }
      // A tip we do not have, or not behind ours: take it and build on it, unless it is more than a device reads.
      try {
        if (this.refusedTip?.oid === theirs) throw this.refusedTip.error;
        const fetched = await fetchNotesTip({
          gitdir,
          url: this.opts.repository,
          ref,
          headers: remote.headers,
          signal: c.signal,
          limits: this.fetchLimits,
          what: `fetching ${ref} from ${redactUrl(this.opts.repository)}`,
        });
        serverNotes = fetched;
        [afresh, replacing] = [fetched === undefined, undefined];
        if (fetched !== undefined) base = fetched;
        next = undefined;
      } catch (e) {
        if (!isStatusDeliveryError(e, 'KS_STATUS_NOTES_TOO_LARGE')) throw e;
        // Only this device writes this ref: what it holds past the limits is no report of ours, and replacing it is
        // what lets the device report at all (docs/fleet-reports.md). The server holds it still: named as `old`.
        this.refusedTip = { oid: theirs, error: e };
        [serverNotes, afresh, replacing, next] = [theirs, true, e, undefined];
      }
    }
    throw new StatusDeliveryError(
      'KS_STATUS_CONFLICT',
      `${what}: ${moved.join(', ')} moved under us ${this.pushAttempts} times (another agent with this device name?); will try again later`,
    );
  }

  private async prepareCache(gitdir: string): Promise<void> {
    if (this.cacheReady) return;
    await initNotesCache(gitdir);
    this.cacheReady = true;
  }

  private authHeaders(): Record<string, string> {
    if (!this.opts.token) return {};
    const basic = Buffer.from(`${this.opts.username ?? 'x-access-token'}:${this.opts.token}`).toString('base64');
    return { authorization: `Basic ${basic}` };
  }

  /** Author and committer of a notes commit made now. */
  private signature(): NoteCommitOptions {
    const { signer, certificate } = this.opts;
    return {
      author: this.author,
      at: this.now(),
      ...(signer && { signer }),
      ...(certificate !== undefined && { certificate }),
    };
  }
}

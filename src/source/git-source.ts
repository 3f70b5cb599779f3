// The Git source (SPEC §7): follows one branch of a remote over HTTP(S), or of a local repository, and offers each
// new tip as a revision read straight from the commit's tree. A look asks where the branch points (one protocol v2
// ls-refs exchange for a remote, a ref file for a local repository); only when it moved is anything fetched.
import fs from 'node:fs';
import git from 'isomorphic-git';
import { OperationError } from '../core/errors.js';
import type { Revision } from './directory-source.js';
import { firstLookDelayMs, pollDelayMs } from '../git/git-poll-delay.js';
import { isCommitId } from '../git/commit-id.js';
import { GitRemoteCache, GitServerBusyError } from '../git/git-remote-cache.js';
import { fullBranchRef, parseGitRepo, shortBranchRef, type GitRepoLocation } from '../git/git-repo-location.js';
import { checkHistory } from './git-history-check.js';
import { busyLookError, checkGitSourceOptions, codedLookError, redacted } from './git-source-errors.js';
import { GIT_SOURCE_DEFAULTS as DEFAULTS, type GitSourceOptions, type GitSourceStatus } from './git-source-options.js';
import { GitTreeReader, locateGitRepository, type GitLocation } from './git-tree-reader.js';
import { GLOBAL_TIMERS, type SourceTimers } from './source-timers.js';

export type { SourceTimers } from './source-timers.js';

/**
 * Follows a branch: `start()` looks once (or, given `device`, at the device's offset in the interval) and then every
 * pollMs (±10%); `syncNow()` looks at once (a webhook). A server answering 429/503 with Retry-After is left alone
 * that long (capped) before the next scheduled look.
 * Each new tip is offered through onRevision (id = the full commit id, reader = a GitTreeReader at that commit)
 * or refused through onRejected when it does not descend from the last applied commit. Failures go to onError
 * and the next look is retried with backoff, never later than one poll interval unless a Retry-After asks for more.
 * Only the tip is ever taken, so a burst of pushes between two looks collapses to the newest commit.
 */
export class GitSource {
  /** `git http://host/fleet.git main`: for people and the state store; never carries credentials. */
  readonly label: string;
  private readonly location: GitRepoLocation;
  private readonly branchRef: string;
  private readonly branch: string;
  private readonly remote?: GitRemoteCache;
  private readonly redactions: string[];
  private readonly now: () => number;
  private readonly timers: SourceTimers;
  private local?: GitLocation;
  private lastSeen?: string;
  private failures = 0;
  private lastLookAt?: number;
  private lastSuccessAt?: number;
  private started = false;
  private closed = false;
  private timer?: unknown;
  private nextLookAt?: number;
  /** Set by a 429/503 with Retry-After: no scheduled look before then. */
  private notBefore?: number;
  private inflight?: Promise<void>;
  private followUp?: Promise<void>;

  /** Throws OperationError KS_USAGE, KS_GIT_BAD_URL or KS_GIT_CREDENTIALS_IN_URL for options that cannot work. */
  constructor(private readonly opts: GitSourceOptions) {
    const token = opts.token;
    this.redactions = token
      ? [token, Buffer.from(`x-access-token:${token}`).toString('base64'), encodeURIComponent(token)]
      : [];
    checkGitSourceOptions(opts);
    this.location = parseGitRepo(opts.repo);
    this.branchRef = fullBranchRef(opts.ref);
    this.branch = shortBranchRef(this.branchRef);
    this.label = `git ${this.location.label} ${this.branch}`;
    this.now = opts.now ?? Date.now;
    this.timers = opts.timers ?? GLOBAL_TIMERS;
    if (this.location.kind === 'http')
      this.remote = new GitRemoteCache({
        url: this.location.url,
        branchRef: this.branchRef,
        cacheDir: opts.cacheDir,
        headers: token ? { authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}` } : {},
        maxFetchBytes: opts.maxFetchBytes ?? DEFAULTS.maxFetchBytes,
        fetchTimeoutMs: opts.fetchTimeoutMs ?? DEFAULTS.fetchTimeoutMs,
        maxPacks: opts.maxCachePacks ?? DEFAULTS.maxCachePacks,
        maxCacheBytes: opts.maxCacheBytes ?? DEFAULTS.maxCacheBytes,
        redact: (t) => this.redact(t),
      });
  }

  /**
   * Looks once (failures go to onError, never thrown), then keeps polling until close(). With `device`, the first
   * look is at the device's offset instead and start() returns once it is scheduled.
   */
  async start(): Promise<void> {
    if (this.started || this.closed) return;
    this.started = true;
    const last = this.opts.lastAppliedCommit();
    const delay =
      this.opts.device === undefined || this.opts.lookAtOnce
        ? 0
        : firstLookDelayMs(
            { device: this.opts.device, pollMs: this.opts.pollMs, running: last !== undefined && isCommitId(last) },
            this.opts.random,
          );
    if (delay > 0) this.arm(delay);
    else await this.syncNow();
  }

  /**
   * Looks now; resolves once a look that began after this call has finished. Calls during a look collapse into
   * one follow-up look, so any number of webhooks cost at most two looks.
   */
  syncNow(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (!this.inflight) return this.runLook();
    this.followUp ??= this.inflight.then(() => {
      this.followUp = undefined;
      return this.runLook();
    });
    return this.followUp;
  }

  /** Stops polling and waits for a look in progress; nothing is offered after it resolves. */
  async close(): Promise<void> {
    this.closed = true;
    this.disarm();
    await this.followUp;
    await this.inflight;
  }

  get status(): GitSourceStatus {
    return {
      ...(this.lastSeen !== undefined && { tip: this.lastSeen }),
      failures: this.failures,
      ...(this.lastLookAt !== undefined && { lastLookAt: this.lastLookAt }),
      ...(this.lastSuccessAt !== undefined && { lastSuccessAt: this.lastSuccessAt }),
      ...(this.nextLookAt !== undefined && { nextLookAt: this.nextLookAt }),
      transfer: { ...(this.remote?.totals ?? { requests: 0, bytesSent: 0, bytesReceived: 0 }) },
    };
  }

  /**
   * A commit this source offered before, read again (the agent's `--on-failure rollback`, the commit applied last after
   * a restart); from the current generation of the cache or the one before it; undefined when it is no longer at hand
   * (a re-fetched cache keeps only recent history). Never fetches: a rollback must not wait on a server.
   */
  async revisionAt(commit: string): Promise<Revision | undefined> {
    if (!isCommitId(commit)) return undefined;
    let loc: GitLocation;
    if (this.remote) {
      const gitdir = await this.remote.locate(commit);
      if (gitdir === undefined) return undefined;
      loc = { gitdir };
    } else {
      loc = this.local ??= locateGitRepository((this.location as { path: string }).path);
      try {
        await git.readCommit({ fs, gitdir: loc.gitdir, oid: commit });
      } catch {
        return undefined;
      }
    }
    return {
      id: commit,
      origin: 'commit',
      source: this.label,
      ref: this.branchRef,
      reader: new GitTreeReader(loc, commit, this.branch),
    };
  }

  /** The bare cache repository of a remote (undefined for a local repository or before the first fetch). */
  get cacheGitdir(): string | undefined {
    return this.remote?.gitdir;
  }

  private runLook(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.disarm();
    const p: Promise<void> = this.lookReporting().finally(() => {
      if (this.inflight === p) this.inflight = undefined;
      this.schedule();
    });
    this.inflight = p;
    return p;
  }

  private schedule(): void {
    // A pending follow-up looks next and schedules after itself.
    if (this.closed || !this.started || this.followUp) return;
    let delay = pollDelayMs(
      this.failures,
      { pollMs: this.opts.pollMs, retryBaseMs: this.opts.retryBaseMs },
      this.opts.random,
    );
    if (this.notBefore !== undefined) delay = Math.max(delay, this.notBefore - this.now());
    this.arm(delay);
  }

  private arm(delay: number): void {
    this.disarm();
    // setTimeout treats anything past 2^31−1 ms (24.8 days) as 1 ms: clamp rather than poll in a tight loop.
    const ms = Math.min(Math.max(0, delay), 2 ** 31 - 1);
    this.nextLookAt = this.now() + ms;
    this.timer = this.timers.setTimeout(() => void this.syncNow(), ms);
  }

  private disarm(): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.nextLookAt = undefined;
  }

  private async lookReporting(): Promise<void> {
    this.lastLookAt = this.now();
    this.notBefore = undefined;
    let outcome: Outcome | undefined;
    try {
      outcome = await this.look();
      this.failures = 0;
      this.lastSuccessAt = this.now();
    } catch (e) {
      this.failures++;
      if (!this.closed)
        this.report(
          e instanceof GitServerBusyError ? this.busy(e) : codedLookError(e, this.label, (t) => this.redact(t)),
        );
      return;
    }
    if (this.closed || !outcome) return;
    // The callbacks belong to the agent: their failures are reported, but they are not failed looks.
    try {
      if (outcome.kind === 'revision') this.opts.onRevision(outcome.revision);
      else this.opts.onRejected(outcome.rejection);
    } catch (e) {
      this.report(e as Error);
    }
  }

  private report(e: Error & { code?: string }): void {
    try {
      this.opts.onError(e);
    } catch {
      /* an error handler that throws has nowhere left to report to */
    }
  }

  /** One look: undefined when the branch has not moved since the last offer or refusal. */
  private async look(): Promise<Outcome | undefined> {
    const cache = {};
    let tip: string;
    let loc: GitLocation;
    if (this.remote) {
      tip = await this.remote.lookRemote();
      if (tip === this.lastSeen) return undefined;
      // Already here after a restart, or from a deepening: nothing to fetch.
      if (!(await this.remote.has(tip, cache))) tip = await this.remote.fetchTip();
      if (tip === this.lastSeen) return undefined;
      loc = { gitdir: this.remote.gitdir! };
    } else {
      loc = this.local ??= locateGitRepository((this.location as { path: string }).path);
      try {
        tip = await git.resolveRef({ fs, gitdir: loc.gitdir, ref: this.branchRef });
      } catch {
        throw new OperationError('KS_GIT_REF_NOT_FOUND', `${this.location.label} has no branch ${this.branch}`);
      }
      if (tip === this.lastSeen) return undefined;
    }
    let rejection: { code: string; reason: string } | undefined;
    try {
      rejection = await checkHistory(tip, loc.gitdir, cache, this.opts, this.remote, this.branch);
    } catch (e) {
      // Not a coded failure of a transfer but a read of the cache that failed (a damaged pack): fetch afresh next time.
      if (!(e instanceof OperationError)) this.remote?.distrust();
      throw e;
    }
    if (this.closed) return undefined;
    this.lastSeen = tip;
    if (rejection) return { kind: 'rejected', rejection: { commit: tip, ...rejection } };
    return {
      kind: 'revision',
      revision: {
        id: tip,
        origin: 'commit',
        source: this.label,
        ref: this.branchRef,
        reader: new GitTreeReader(loc, tip, this.branch),
      },
    };
  }

  private busy(e: GitServerBusyError): OperationError {
    const { error, notBefore } = busyLookError(e, this.now(), this.opts.pollMs, (t) => this.redact(t));
    if (notBefore !== undefined) this.notBefore = notBefore;
    return error;
  }

  private redact(text: string): string {
    return redacted(text, this.redactions);
  }
}

type Outcome =
  | { kind: 'revision'; revision: Revision }
  | { kind: 'rejected'; rejection: { commit: string; code: string; reason: string } };

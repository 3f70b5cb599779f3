// The options and the status of a GitSource, and the defaults of its options. Apart from git-source.ts, whose polling
// and looks are long enough on their own; the tests build these options too.
import type { TransferTotals } from '../git/git-transfer.js';
import type { Revision } from './directory-source.js';
import type { SourceTimers } from './source-timers.js';

export interface GitSourceOptions {
  /** An http(s) URL (without credentials: see parseGitRepo) or a local path, bare or a working tree. */
  repo: string;
  /** The branch followed: `main` or `refs/heads/main`. */
  ref: string;
  /** Where a remote is fetched to (`<state-dir>/git`); unused for a local path. */
  cacheDir: string;
  /** HTTP token, sent as Basic auth with the user `x-access-token` (GitHub, Gitea, Forgejo, GitLab). Never logged. */
  token?: string;
  /** Time between looks (jittered ±10%), and the cap of the retry backoff. */
  pollMs: number;
  /** First retry after a failed look; doubles per failure up to pollMs. Default 1 s. */
  retryBaseMs?: number;
  /** In [0, 1): the jitter. */
  random: () => number;
  /** Epoch milliseconds, for the status timestamps and Retry-After dates. Default Date.now. */
  now?: () => number;
  /** Schedules the looks. Default the global setTimeout/clearTimeout. */
  timers?: SourceTimers;
  /**
   * The device's name: when set, the first look after start() waits for the device's offset in the poll interval
   * (SPEC §13, see firstLookDelayMs), unless nothing from Git was applied yet. Unset: start() looks at once.
   */
  device?: string;
  /** Look at once at start() even with `device` (what the device's plan is chosen by changed since the last apply). */
  lookAtOnce?: boolean;
  /** Cap on the bytes one remote operation (ls-refs, a fetch, one deepening) may receive. Default 128 MiB. */
  maxFetchBytes?: number;
  /** Cap on the time one remote operation may take. Default 60 s. */
  fetchTimeoutMs?: number;
  /**
   * How far back the last applied commit is looked for: commits read, and generations a shallow cache is deepened
   * by (deepening goes 16, 32, 64… at a time, so ~7 round trips for 1,000). Past it the commit is refused with
   * KS_HISTORY_UNVERIFIED. Default 1,000.
   */
  maxHistoryCommits?: number;
  /** A remote cache holding this many packs (one per fetch) is re-fetched into a fresh directory. Default 50. */
  maxCachePacks?: number;
  /** Likewise for the cache's size in bytes. Default 64 MiB. */
  maxCacheBytes?: number;
  /** The commit of the last revision applied from Git; anything that is not a 40-hex commit id sets no constraint. */
  lastAppliedCommit: () => string | undefined;
  /** Accept commits that do not descend from the last applied one (force-pushes). */
  allowHistoryRewrite: boolean;
  onRevision: (r: Revision) => void;
  onRejected: (r: { commit: string; code: string; reason: string }) => void;
  onError: (e: Error & { code?: string }) => void;
}

export interface GitSourceStatus {
  /** The commit last offered or refused. */
  tip?: string;
  /** Looks failed in a row. */
  failures: number;
  lastLookAt?: number;
  lastSuccessAt?: number;
  /** When the next scheduled look is due (a webhook may come first). */
  nextLookAt?: number;
  /** Totals over the wire for a remote (zeros for a local repository). */
  transfer: TransferTotals;
}

/** The defaults of the options that have one. */
export const GIT_SOURCE_DEFAULTS = {
  maxFetchBytes: 128 * 1024 * 1024,
  fetchTimeoutMs: 60_000,
  maxHistoryCommits: 1000,
  maxCachePacks: 50,
  maxCacheBytes: 64 * 1024 * 1024,
};

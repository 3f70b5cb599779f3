// The options of a GitRemoteCache: the remote, its branch, where the cache lives and the bounds of a fetch. Apart so
// that the transfer (git-transfer.ts), which needs the remote and the bounds, and the cache do not import each other.
import type { PackInflationLimits } from './pack-inflation.js';

export interface GitRemoteCacheOptions {
  /** The remote, without credentials. */
  url: string;
  /** The full branch ref followed, `refs/heads/main`. */
  branchRef: string;
  /** The directory holding every remote's cache (`<state-dir>/git`); this remote uses a subdirectory of it. */
  cacheDir: string;
  /** The Authorization header, when the remote needs a token. */
  headers: Record<string, string>;
  maxFetchBytes: number;
  fetchTimeoutMs: number;
  /** A fetch into a cache holding this many packs or more goes to a fresh generation instead. */
  maxPacks: number;
  /** Likewise for the total size of the cache's packs. */
  maxCacheBytes: number;
  /** Removes secrets from a message. */
  redact: (text: string) => string;
  /** What one fetched pack may inflate to (tests lower it). Default PACK_INFLATION_LIMITS. */
  inflation?: PackInflationLimits;
}

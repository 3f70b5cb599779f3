// The bounds every unpack runs under: an archive is untrusted input even after its digest matched.

/** Caps on one unpack; exceeding any of them fails the whole unpack. */
export interface UnpackLimits {
  /** Entries of any kind (files and directories). */
  maxEntries: number;
  /** Bytes actually written to disk, summed over all files. */
  maxTotalBytes: number;
  /** Path components of one entry (`a/b/c` is 3). */
  maxDepth: number;
  /** Bytes (UTF-8) of one entry's name. */
  maxPathLength: number;
}

/** Generous for real software bundles, small enough that a bomb cannot fill an edge device's disk. */
export const DEFAULT_UNPACK_LIMITS: Readonly<UnpackLimits> = Object.freeze({
  maxEntries: 10_000,
  maxTotalBytes: 1024 * 1024 * 1024,
  maxDepth: 32,
  maxPathLength: 4096,
});

/** Fills unspecified limits with the defaults, so callers (and tests) override only what they care about. */
export function resolveUnpackLimits(limits: Partial<UnpackLimits> = {}): UnpackLimits {
  const out = { ...DEFAULT_UNPACK_LIMITS, ...limits };
  for (const [k, v] of Object.entries(out))
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`unpack limit ${k} must be a non-negative integer, got ${v}`);
  return out;
}

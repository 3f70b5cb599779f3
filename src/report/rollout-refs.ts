// The rollout refs (SPEC §8, §14): where each device tells the fleet how one commit went for it, laid out so that a
// device waiting at a gate reads only the waves it needs, and on a large fleet only a sample of them.
//
//   refs/keystone-rollout/<wave>/<bucket>/<device>/<commit>-<state>[.<sig>]      held, applying, success, halted
//   refs/keystone-rollout/<wave>/failed/<commit>/<device>-<state>[.<sig>]        failure, error
//
// `.<sig>`: the device's signature over what the name says (identity/report-signature.ts, SPEC §15): 16 hex digits of
// key id and 86 of base64url. Earlier agents wrote none; a reader decides what an unsigned ref is worth.
//
// - Each device writes only its own refs (no two devices race for one), next to its notes ref and in the same push.
// - <wave> first: a device in wave k lists the waves j ≤ k with protocol v2 ls-refs prefixes, never the whole fleet's
//   refs; and in each wave only the subtrees it needs, each by its exact name (`<wave>/<bucket>/`, and
//   `<wave>/failed/<commit>/` for the commits it holds): refs anywhere else, the failures of other commits or names
//   that are no bucket, are never sent however many a pusher adds (issue 28, finding 11).
// - <bucket>, two hex digits from the device's name (independent of its wave's hash): past ~700 refs a reader
//   lists only some of the 256 buckets, an unbiased sample of every wave, so what it reads stays near 100 KB however
//   large the fleet (agent/rollout-gate.ts).
// - A device keeps refs for the commit it runs and for newer ones it has seen, and deletes the rest as it reports:
//   at most a few per device, and a device is known in its wave by them.
// - Failures apart, under the commit: a reader lists every failure of a commit in every wave it reads, complete,
//   however it samples the rest, so a halt is never missed for want of a sample ("failed" is not a bucket: buckets
//   are two hex digits).
// - The ref points at the device's notes commit (pushed with it): names alone carry what the gate needs, so a
//   reader fetches no objects.
import { createHash } from 'node:crypto';
import { isCommitId } from '../git/commit-id.js';
import { ROLLOUT_STATES, type RolloutReport, type RolloutState } from '../core/rollout-gate.js';
import {
  formatRefSignature,
  parseRefSignature,
  rolloutMessage,
  signWith,
  type ReportSignature,
  type ReportSigner,
} from '../identity/report-signature.js';
import { encodeDeviceName } from './device-notes-ref.js';

export const ROLLOUT_PREFIX = 'refs/keystone-rollout/';
/** The 256 buckets, `00` … `ff`. */
export const BUCKETS: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

const WAVE = /^[a-z0-9][a-z0-9._-]{0,62}$/i;

/** Two hex digits from the device's name: which sample a reader meets it in. */
export function bucketOf(device: string): string {
  return BUCKETS[createHash('sha256').update(`keystone-bucket\0${device}`).digest()[0]!]!;
}

export interface RolloutRef extends RolloutReport {
  bucket: string;
  /** The device's signature from the name, when it carries one. */
  signature?: ReportSignature;
}

const FAILED = 'failed';
const isFailure = (state: RolloutState) => state === 'failure' || state === 'error';

/** The ref of a report; signed by `signer` when given (the name then ends in the signature). */
export function rolloutRef(
  r: Pick<RolloutReport, 'wave' | 'device' | 'commit' | 'state'>,
  signer?: ReportSigner,
): string {
  const sig = signer ? `.${formatRefSignature(signWith(signer, rolloutMessage(r)))}` : '';
  if (isFailure(r.state))
    return `${ROLLOUT_PREFIX}${r.wave}/${FAILED}/${r.commit}/${encodeDeviceName(r.device)}-${r.state}${sig}`;
  return `${ROLLOUT_PREFIX}${r.wave}/${bucketOf(r.device)}/${encodeDeviceName(r.device)}/${r.commit}-${r.state}${sig}`;
}

/** A ref name's leaf without its signature (`.` + 102 characters at the end), and the signature; undefined: malformed. */
function splitSignature(leaf: string): { rest: string; signature?: ReportSignature } | undefined {
  const at = leaf.length - 103;
  if (at < 1 || leaf[at] !== '.' || !/^[0-9a-f]{16}[A-Za-z0-9_-]{86}$/.test(leaf.slice(at + 1))) return { rest: leaf };
  const signature = parseRefSignature(leaf.slice(at + 1));
  return signature ? { rest: leaf.slice(0, at), signature } : undefined;
}

/** The ls-refs prefix of every failure of `commit` in `wave`. */
export function failuresPrefix(wave: string, commit: string): string {
  return `${ROLLOUT_PREFIX}${wave}/${FAILED}/${commit}/`;
}

/**
 * The ls-refs prefixes that list `waves`, whole or in the given buckets: a bucket (two hex digits) or a group of
 * sixteen (its first digit, `a` for a0–af). One prefix per bucket, ending in its slash: `…/early/a3/` lists that
 * bucket and nothing else (`…/early/` or `…/early/a` would also list whatever else anyone pushed under the wave).
 * Not the failures: failuresPrefix, per commit held.
 */
export function rolloutPrefixes(waves: readonly string[], buckets?: readonly string[]): string[] {
  const chosen = new Set(
    (buckets ?? BUCKETS).flatMap((b) => (b.length === 1 ? BUCKETS.filter((x) => x.startsWith(b)) : [b])),
  );
  return waves.flatMap((w) => BUCKETS.filter((b) => chosen.has(b)).map((b) => `${ROLLOUT_PREFIX}${w}/${b}/`));
}

/**
 * A rollout ref as a device writes it, or undefined. Anyone who can push can push any ref: only the canonical form
 * counts (the device's own bucket, the one encoding of its name, a known state), so a forged name cannot stand in
 * for a device or be counted twice.
 */
export function parseRolloutRef(ref: string): RolloutRef | undefined {
  if (!ref.startsWith(ROLLOUT_PREFIX)) return undefined;
  const parts = ref.slice(ROLLOUT_PREFIX.length).split('/');
  if (parts.length !== 4) return undefined;
  const wave = parts[0]!;
  if (!WAVE.test(wave) || wave.includes('..')) return undefined;
  let bucket: string | undefined;
  let encoded: string;
  let commit: string;
  let state: RolloutState;
  const split = splitSignature(parts[3]!);
  if (!split) return undefined;
  const leaf = split.rest;
  if (parts[1] === FAILED) {
    const dash = leaf.lastIndexOf('-');
    commit = parts[2]!;
    encoded = leaf.slice(0, dash);
    state = leaf.slice(dash + 1) as RolloutState;
    if (dash < 1 || !isCommitId(commit) || !isFailure(state)) return undefined;
  } else {
    const dash = leaf.indexOf('-');
    bucket = parts[1]!;
    encoded = parts[2]!;
    commit = leaf.slice(0, dash);
    state = leaf.slice(dash + 1) as RolloutState;
    if (dash !== 40 || !isCommitId(commit) || !ROLLOUT_STATES.includes(state) || isFailure(state)) return undefined;
  }
  let device: string;
  try {
    device = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  if (!/^[^\s\p{Cc}]{1,253}$/u.test(device) || encodeDeviceName(device) !== encoded) return undefined;
  if (bucket !== undefined && bucketOf(device) !== bucket) return undefined;
  return {
    wave,
    bucket: bucket ?? bucketOf(device),
    device,
    commit,
    state,
    ...(split.signature && { signature: split.signature }),
  };
}

// Verification of a whole revision: the signature over SHA256SUMS on raw bytes first, then every file it lists.
import type { ReadResult, RepoReader } from '../source/repo-reader.js';
import { MAX_DOCUMENT_BYTES } from '../source/repo-reader.js';
import { escapesRepository } from '../core/recipe.js';
import type { Keyring } from './keyring.js';
import { keyIdHex, parseSignatures, signedRef, signedTimestamp, verifySignature } from './minisign.js';
import { parseSha256Sums, sha256Hex } from './sha256sums.js';
import { TrustError } from './trust-error.js';
import { isoTime } from '../core/iso-time.js';

export const SUMS_FILE = 'SHA256SUMS';
export const SIG_FILE = 'SHA256SUMS.minisig';
/** A signature block is ~300 bytes; 64 KiB allows a couple of hundred signers and no more. */
export const MAX_SIGNATURE_BYTES = 64 * 1024;
/** 10,000 components at ~100 bytes a line, with room to spare. */
export const MAX_SUMS_BYTES = 16 * 1024 * 1024;

export interface VerifyOptions {
  keyring: Keyring;
  /** Now, in seconds since the epoch (injected). */
  now: number;
  /** Refuse a revision signed earlier than this (the last applied revision's signing time): no replay. */
  notBefore?: number;
  /** Refuse a revision whose signature is older than this many seconds (a frozen state). */
  maxAgeSeconds?: number;
  /**
   * How far (seconds) a signature may be dated after `now` (default DEFAULT_MAX_CLOCK_SKEW_SECONDS): a signature from
   * the future would raise the replay floor above every honest signature to come, so it is refused.
   */
  maxClockSkewSeconds?: number;
  /**
   * The full ref the revision was read from (`refs/heads/main`), when it came from a followed Git ref: a signature
   * bound to another ref does not count (SPEC §6), so a signed branch cannot be promoted by whoever can push.
   */
  ref?: string;
  /** Count only signatures bound to a ref (`--require-ref`): an unbound set is refused, not taken as meant for any. */
  requireRef?: boolean;
  /**
   * Verify the signature over SHA256SUMS and parse the sums, without reading the files it lists (`files` is then
   * empty): for an operator's command on a checkout being edited (`keystonectl secret set`, whose secrets/NAME.age
   * differs from the signed one until the next `sign`), which checks each file it relies on against `sums` itself.
   */
  sumsOnly?: boolean;
}

/** Five minutes: more than two NTP-synchronised clocks drift apart, far less than a poisoned floor would lock out. */
export const DEFAULT_MAX_CLOCK_SKEW_SECONDS = 300;
/** A device clock before this (2020-01-01) was never set: a board without a real-time clock booted at 1970. */
const UNSET_CLOCK_BEFORE = 1_577_836_800;

export interface VerifiedRevision {
  /** The signing time (seconds) by which `threshold` trusted keys had signed: the revision's serial for replay protection. */
  signedAt: number;
  /** Key ids (minisign's hex) of the trusted keys whose valid signatures counted. */
  signers: string[];
  threshold: number;
  /** sha256 of SHA256SUMS: names the signed set. */
  sumsDigest: string;
  sums: ReadonlyMap<string, string>;
  /** Every listed file, read and checked once; the loader reads from here. Empty with `sumsOnly`. */
  files: ReadonlyMap<string, Uint8Array>;
}

async function readCapped(
  reader: RepoReader,
  path: string,
  max: number,
  tooLarge: 'KS_SIGNATURE_TOO_LARGE' | 'KS_SUMS_TOO_LARGE',
): Promise<Uint8Array> {
  const r = await reader.readFile(path, max);
  if (r.ok) return r.bytes;
  if (r.code === 'KS_FILE_TOO_LARGE') throw new TrustError(tooLarge, `${path} is over the limit of ${max} bytes`, path);
  if (r.code === 'KS_FILE_NOT_FOUND')
    throw new TrustError('KS_UNSIGNED', `the revision is not signed: ${path} is missing (${reader.label})`, path);
  throw new TrustError('KS_UNSIGNED', `${path}: ${r.message}`, path);
}

/**
 * Refuses the revision as a whole, with the file, key and check that failed, unless at least
 * `threshold` distinct trusted keys signed SHA256SUMS and every file it lists matches its digest.
 */
export async function verifyRevision(reader: RepoReader, opts: VerifyOptions): Promise<VerifiedRevision> {
  // 1. Raw bytes, capped, before anything is parsed.
  const sigBytes = await readCapped(reader, SIG_FILE, MAX_SIGNATURE_BYTES, 'KS_SIGNATURE_TOO_LARGE');
  const sumsBytes = await readCapped(reader, SUMS_FILE, MAX_SUMS_BYTES, 'KS_SUMS_TOO_LARGE');
  let sigText: string;
  try {
    sigText = new TextDecoder('utf-8', { fatal: true }).decode(sigBytes);
  } catch {
    throw new TrustError('KS_SIGNATURE_MALFORMED', `${SIG_FILE} is not text`, SIG_FILE);
  }
  let signatures;
  try {
    signatures = parseSignatures(sigText);
  } catch (e) {
    throw new TrustError('KS_SIGNATURE_MALFORMED', `${SIG_FILE}: ${(e as Error).message}`, SIG_FILE);
  }

  // 2. Count the distinct trusted keys with a valid signature; remember why the others failed.
  const { keys, threshold } = opts.keyring;
  const skew = opts.maxClockSkewSeconds ?? DEFAULT_MAX_CLOCK_SKEW_SECONDS;
  const valid = new Map<string, { id: string; at: number }>();
  const failures: TrustError[] = [];
  const untrusted: string[] = [];
  for (const sig of signatures) {
    const id = keyIdHex(sig.keyId);
    const key = keys.get(id);
    if (!key) {
      untrusted.push(id);
      continue;
    }
    try {
      verifySignature(sumsBytes, sig, key, SIG_FILE);
    } catch (e) {
      failures.push(e as TrustError);
      continue;
    }
    const at = signedTimestamp(sig.trustedComment);
    if (at === undefined) {
      failures.push(
        new TrustError(
          'KS_SIGNATURE_NO_TIMESTAMP',
          `the trusted comment of key ${id} has no timestamp:N, so replay cannot be ruled out`,
          SIG_FILE,
          id,
        ),
      );
      continue;
    }
    const refError = checkRef(signedRef(sig.trustedComment), opts, id);
    if (refError) {
      failures.push(refError);
      continue;
    }
    // A signature from the future does not count: it would raise the replay floor past every honest one to come.
    if (at > opts.now + skew) {
      failures.push(fromTheFuture(at, opts.now, skew, id));
      continue;
    }
    // Distinct keys are distinct public keys: one key listed twice under two ids counts once.
    const pk = Buffer.from(key.publicKey).toString('hex');
    const prev = valid.get(pk);
    valid.set(pk, { id, at: Math.max(at, prev?.at ?? 0) });
  }
  if (valid.size < threshold) {
    if (valid.size === 0 && failures.length > 0) throw failures[0]!;
    if (valid.size === 0)
      throw new TrustError(
        'KS_UNTRUSTED_KEY',
        `${SIG_FILE} is signed only by untrusted key${untrusted.length > 1 ? 's' : ''} ${untrusted.join(', ')} (trusted: ${[...keys.keys()].join(', ')})`,
        SIG_FILE,
        untrusted[0],
      );
    const why = [...failures.map((f) => f.message), ...untrusted.map((u) => `key ${u} is not trusted`)];
    throw new TrustError(
      'KS_THRESHOLD_NOT_MET',
      `${valid.size} of the ${threshold} required trusted signatures (${[...valid.values()].map((v) => v.id).join(', ')})${why.length ? `; ${why.join('; ')}` : ''}`,
      SIG_FILE,
    );
  }

  // 3. Replay and staleness, on the time by which `threshold` keys had signed (the k-th latest): one
  //    compromised key adding a fresh signature to an old k-of-n set must not make it look new.
  const times = [...valid.values()].map((v) => v.at).sort((a, b) => b - a);
  const signedAt = times[threshold - 1]!;
  if (opts.notBefore !== undefined && signedAt < opts.notBefore)
    throw new TrustError(
      'KS_SIGNATURE_REPLAYED',
      `signed at ${iso(signedAt)}, earlier than the revision applied last (${iso(opts.notBefore)}): an old signed state is not applied again`,
      SIG_FILE,
    );
  if (opts.maxAgeSeconds !== undefined && opts.now - signedAt > opts.maxAgeSeconds)
    throw new TrustError(
      'KS_SIGNATURE_TOO_OLD',
      `signed at ${iso(signedAt)}, more than ${opts.maxAgeSeconds} s ago: the state looks frozen`,
      SIG_FILE,
    );

  // 4. Every listed file exists and matches: a removed, swapped or edited file refuses the set.
  const sums = parseSha256Sums(new TextDecoder().decode(sumsBytes), SUMS_FILE);
  const files = new Map<string, Uint8Array>();
  for (const [path, digest] of sums) {
    if (escapesRepository(path))
      throw new TrustError('KS_SUMS_MALFORMED', `${SUMS_FILE} lists ${path}, outside the repository`, SUMS_FILE);
    if (opts.sumsOnly) continue;
    const r = await reader.readFile(path, MAX_DOCUMENT_BYTES);
    if (!r.ok)
      throw new TrustError(
        'KS_SIGNED_FILE_MISSING',
        `${path} is listed in ${SUMS_FILE} but cannot be read: ${r.message}`,
        path,
      );
    if (sha256Hex(r.bytes) !== digest)
      throw new TrustError(
        'KS_DIGEST_MISMATCH',
        `${path} does not match its digest in ${SUMS_FILE} (edited, or from another signed revision)`,
        path,
      );
    files.set(path, r.bytes);
  }
  return {
    signedAt,
    signers: [...valid.values()].map((v) => v.id).sort(),
    threshold,
    sumsDigest: sha256Hex(sumsBytes),
    sums,
    files,
  };
}

/** Why a valid signature does not count for the ref this revision came from, or undefined when it does. */
function checkRef(bound: string | null | undefined, opts: VerifyOptions, id: string): TrustError | undefined {
  if (bound === null)
    return new TrustError(
      'KS_TRUSTED_COMMENT_INVALID',
      `the trusted comment of key ${id} names more than one ref=`,
      SIG_FILE,
      id,
    );
  if (bound === undefined) {
    if (!opts.requireRef) return undefined;
    return new TrustError(
      'KS_SIGNATURE_NO_REF',
      `key ${id} signed without a ref, and this device requires one (--require-ref): sign with keystonectl sign --ref ${opts.ref ?? 'BRANCH'}`,
      SIG_FILE,
      id,
    );
  }
  if (opts.ref === undefined || bound === opts.ref) return undefined;
  return new TrustError(
    'KS_SIGNATURE_WRONG_REF',
    `key ${id} signed this set for ${bound}, and it was read from ${opts.ref}: a set signed for one ref is not applied from another`,
    SIG_FILE,
    id,
  );
}

/** A reader that serves only what the signature covers: a file not in SHA256SUMS is refused, not read. */
export class VerifiedReader implements RepoReader {
  readonly label: string;
  constructor(
    private readonly inner: RepoReader,
    private readonly verified: VerifiedRevision,
  ) {
    this.label = inner.label;
  }
  async readFile(path: string, _maxBytes: number): Promise<ReadResult> {
    const bytes = this.verified.files.get(path);
    if (bytes) return { ok: true, bytes };
    // A file that does not exist at all is a plain "not found"; one that exists unlisted is an attack or a forgotten re-sign.
    // Asked with a limit of 0 bytes: a reader checks a file's size before reading it, so an unlisted file is never
    // loaded (it may be a 1 GiB blob beside the signed ones), only found to be there.
    const r = await this.inner.readFile(path, 0);
    if (!r.ok && r.code === 'KS_FILE_NOT_FOUND') return r;
    throw new TrustError(
      'KS_FILE_NOT_SIGNED',
      `${path} is not listed in ${SUMS_FILE}: it was added after signing, or the set was not re-signed`,
      path,
    );
  }
}

/** The refusal names both clocks and both fixes: the device's clock may be the wrong one (unset, years behind). */
function fromTheFuture(at: number, now: number, skew: number, keyId: string): TrustError {
  const unset =
    now < UNSET_CLOCK_BEFORE
      ? "; this device's clock looks unset (a board without a real-time clock boots at 1970): no signature is accepted until it is set (NTP, or date -s)"
      : '';
  return new TrustError(
    'KS_SIGNATURE_FROM_FUTURE',
    `key ${keyId} signed at ${iso(at)}, later than this device's clock (${iso(now)}) plus the allowed clock skew (${skew} s, --max-clock-skew): ` +
      `check the device's clock, or re-sign with a correct clock (applied, it would raise the replay floor above every honest signature to come)${unset}`,
    SIG_FILE,
    keyId,
  );
}

function iso(seconds: number): string {
  const d = new Date(seconds * 1000);
  // minisign allows timestamps past what a Date can hold (year 275760): say the number rather than throw.
  return Number.isNaN(d.getTime()) ? `${seconds} s after 1970` : isoTime(d.getTime());
}

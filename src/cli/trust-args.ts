// `--trusted-key`, `--threshold`, `--max-age`, `--max-clock-skew` and `--allow-unsigned`: how every command that loads a revision verifies it first.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDuration } from '../core/duration.js';
import type { TrustSetting } from '../agent/agent.js';
import type { RepoReader } from '../source/repo-reader.js';
import { buildKeyring } from '../trust/keyring.js';
import { VerifiedReader, verifyRevision, type VerifiedRevision } from '../trust/verify-revision.js';
import { nowMs, UsageError, type CliIo } from './io.js';
import { isoTime } from '../core/iso-time.js';

export const TRUST_OPTIONS = {
  'trusted-key': { type: 'string', multiple: true },
  threshold: { type: 'string' },
  'max-age': { type: 'string' },
  'max-clock-skew': { type: 'string' },
  'allow-unsigned': { type: 'boolean', default: false },
  'require-ref': { type: 'boolean', default: false },
} as const;

export const TRUST_USAGE =
  '(--trusted-key FILE [--trusted-key FILE…] [--threshold K] [--max-age DURATION] [--max-clock-skew 5m] [--require-ref] | --allow-unsigned)';

export interface TrustValues {
  'trusted-key'?: string[];
  threshold?: string;
  'max-age'?: string;
  'max-clock-skew'?: string;
  'allow-unsigned'?: boolean;
  'require-ref'?: boolean;
}

export type Verification =
  { unsigned: true } | ({ unsigned: false; files: string[] } & Omit<VerifiedRevision, 'files' | 'sums'>);

export interface TrustPolicy {
  /** Verifies the revision behind `reader` and returns the reader the loader must use. */
  open(reader: RepoReader): Promise<{ reader: RepoReader; verification: Verification }>;
}

/**
 * Fails closed: no trusted key and no explicit --allow-unsigned is a usage error, not an unsigned load. `ref` (full,
 * `refs/heads/main`): the ref the files are meant for, so a signature bound to another one does not count.
 */
export function trustPolicy(values: TrustValues, io: CliIo, ref?: string): TrustPolicy {
  const setting = trustSetting(values, io);
  if (setting.unsigned) return { open: async (reader) => ({ reader, verification: { unsigned: true } }) };
  return {
    async open(reader) {
      const verified = await verifyRevision(reader, {
        keyring: setting.keyring,
        now: Math.floor(nowMs(io) / 1000),
        ...(setting.maxAgeSeconds !== undefined && { maxAgeSeconds: setting.maxAgeSeconds }),
        ...(setting.maxClockSkewSeconds !== undefined && { maxClockSkewSeconds: setting.maxClockSkewSeconds }),
        ...(ref !== undefined && { ref }),
        ...(setting.requireRef === true && { requireRef: true }),
      });
      const { files: _f, sums, ...summary } = verified;
      return {
        reader: new VerifiedReader(reader, verified),
        verification: { unsigned: false, ...summary, files: [...sums.keys()].sort() },
      };
    },
  };
}

/** The agent's form of the same flags: a keyring to verify every revision with, or an explicit unsigned mode. */
export function trustSetting(values: TrustValues, io: CliIo): TrustSetting {
  const keys = values['trusted-key'] ?? [];
  if (values['allow-unsigned']) {
    if (keys.length) throw new UsageError('--allow-unsigned and --trusted-key exclude each other');
    if (values['require-ref'])
      throw new UsageError('--require-ref checks signatures: it makes no sense with --allow-unsigned');
    return { unsigned: true };
  }
  if (keys.length === 0)
    throw new UsageError('no trusted key: give --trusted-key FILE (repeatable), or --allow-unsigned for development');
  const threshold = values.threshold === undefined ? 1 : Number(values.threshold);
  if (!Number.isInteger(threshold) || threshold < 1)
    throw new UsageError(`--threshold must be a whole number ≥ 1, not "${values.threshold}"`);
  let maxAgeSeconds: number | undefined;
  if (values['max-age'] !== undefined) {
    const ms = parseDuration(values['max-age']);
    if (ms === undefined || ms <= 0)
      throw new UsageError(`--max-age must be a duration such as 720h, not "${values['max-age']}"`);
    maxAgeSeconds = ms / 1000;
  }
  let maxClockSkewSeconds: number | undefined;
  if (values['max-clock-skew'] !== undefined) {
    const ms = parseDuration(values['max-clock-skew']);
    if (ms === undefined)
      throw new UsageError(`--max-clock-skew must be a duration such as 5m, not "${values['max-clock-skew']}"`);
    maxClockSkewSeconds = ms / 1000;
  }
  const keyring = buildKeyring(
    keys.map((k) => {
      try {
        return { source: k, text: readFileSync(resolve(io.cwd, k), 'utf8') };
      } catch (e) {
        throw new UsageError(`cannot read the trusted key ${k}: ${(e as Error).message}`);
      }
    }),
    threshold,
  );
  return {
    unsigned: false,
    keyring,
    ...(maxAgeSeconds !== undefined && { maxAgeSeconds }),
    ...(maxClockSkewSeconds !== undefined && { maxClockSkewSeconds }),
    ...(values['require-ref'] === true && { requireRef: true }),
  };
}

/** One line for people: who signed, when, or a loud warning that nobody did. */
export function describeVerification(v: Verification): string {
  if (v.unsigned) return 'UNSIGNED: signatures were not checked (--allow-unsigned, development only)';
  return `signed by ${v.signers.join(', ')} at ${isoTime(v.signedAt * 1000)} (${v.signers.length} of ${v.threshold} required)`;
}

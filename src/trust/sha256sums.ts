// SHA256SUMS in `sha256sum` format: one "<hex>  <path>" line per recipe and plan file, signed as one set.
import { createHash } from 'node:crypto';
import { isSecretsPath } from '../core/secret-paths.js';
import { TrustError } from './trust-error.js';

/** Parses strictly: a line that is not `<64 hex>  <path>` (or ` *<path>`), or a path listed twice, refuses the whole file. */
export function parseSha256Sums(text: string, file = 'SHA256SUMS'): Map<string, string> {
  const sums = new Map<string, string>();
  text.split('\n').forEach((line, i) => {
    if (line === '') return;
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!m) throw new TrustError('KS_SUMS_MALFORMED', `${file}:${i + 1}: not a "<sha256>  <path>" line`, file);
    // Every leading `./` (sha256sum writes one for `./x`), so that the path read is the one formatSha256Sums writes.
    const path = m[2]!.replace(/^(\.\/)+/, '');
    // `./` alone names no file: read as the empty path, it would be a digest of nothing in particular.
    if (path === '') throw new TrustError('KS_SUMS_MALFORMED', `${file}:${i + 1}: no path after the digest`, file);
    // No file name holds a NUL, and a carriage return is a CRLF file's, not the name's: refused, not looked up.
    if (/\p{Cc}/u.test(path))
      throw new TrustError('KS_SUMS_MALFORMED', `${file}:${i + 1}: a control character in the path`, file);
    if (sums.has(path)) throw new TrustError('KS_SUMS_MALFORMED', `${file}:${i + 1}: ${path} is listed twice`, file);
    sums.set(path, m[1]!);
  });
  return sums;
}

/** Sorted by path so that signing the same files twice gives the same bytes. */
export function formatSha256Sums(sums: ReadonlyMap<string, string>): string {
  return [...sums.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, hex]) => `${hex}  ${path}\n`)
    .join('');
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The files `sign` covers: every `.toml` under `recipes/` and `plans/`, the fleet file (SPEC §13), the revocations
 * (SPEC §15) and the files of secrets/ (SPEC §16).
 */
export function isSignedDocument(path: string): boolean {
  return (
    /^(recipes|plans)\/.+\.toml$/.test(path) ||
    path === 'fleet.toml' ||
    path === 'devices/revoked.toml' ||
    isSecretsPath(path)
  );
}

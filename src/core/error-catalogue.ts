// The error catalogue: every `KS_*` code Keystone emits, once, with its kind, the exit code a program stops with when
// the code ends it, the HTTP status the API answers it with, and a one-line meaning. Pure data: the one source that
// CODES (errors.ts), exitCodeOf (errors.ts) and docs/errors.md (lint/errors-doc.mjs) read. Codes are stable:
// scripts and tests depend on them; add one here before emitting it (a literal not listed here fails tsc where it is
// typed as ErrorCode, and test/core/error-catalogue.test.ts everywhere else).
import type { CatalogueEntry } from './error-entry.js';
import { INPUT_CODES } from './error-codes-input.js';
import { RUNNING_CODES } from './error-codes-running.js';

export { ERROR_KINDS, type CatalogueEntry, type ErrorKind, type ExitCode } from './error-entry.js';

/** Every code, once: the two parts share no code (test/core/error-catalogue.test.ts). */
export const CATALOGUE = { ...INPUT_CODES, ...RUNNING_CODES } as const satisfies Record<`KS_${string}`, CatalogueEntry>;

/** Every code Keystone emits. A literal typed as ErrorCode that is not in the catalogue fails tsc. */
export type ErrorCode = keyof typeof CATALOGUE;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(CATALOGUE, code);
}

/** The catalogue's entry of a code; undefined for a code it does not list (another program's, Node's). */
export function catalogued(code: unknown): CatalogueEntry | undefined {
  return isErrorCode(code) ? CATALOGUE[code] : undefined;
}

/** The anchor of a code in docs/errors.md: other pages link to `errors.md#ks_toml_syntax`. */
export function errorAnchor(code: ErrorCode): string {
  return code.toLowerCase();
}

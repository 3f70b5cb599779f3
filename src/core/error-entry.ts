// One entry of the error catalogue (error-catalogue.ts): a code's kind, exit code, HTTP status and meaning, and the
// small makers the catalogue's parts write their entries with.
/**
 * - `invalid`: the input does not validate (a revision, a flag, a configuration file, a request): fix it.
 * - `refused`: the input is well-formed but not trusted or not permitted here (a signature, a permission, a policy).
 * - `stalled`: an operation failed and will not succeed by itself: someone has to look.
 * - `waiting`: held back on purpose until something changes (a lock, a gate, a shutdown); nothing is wrong.
 * - `transient`: a failure outside Keystone that is retried (a network, a busy server).
 */
export type ErrorKind = 'invalid' | 'refused' | 'stalled' | 'waiting' | 'transient';
export const ERROR_KINDS: readonly ErrorKind[] = ['invalid', 'refused', 'stalled', 'waiting', 'transient'];

/** SPEC §9: 0 ok, 1 the operation failed, 2 bad input (invalid, unsigned, untrusted). */
export type ExitCode = 0 | 1 | 2;

export interface CatalogueEntry {
  readonly kind: ErrorKind;
  /** What keystone or keystonectl exits with when an error with this code ends it (exitCodeOf, errors.ts). */
  readonly exit: 1 | 2;
  /** The status the API answers with this code, where it does. */
  readonly http?: number;
  /** One line: what happened. */
  readonly meaning: string;
  /** The page of docs/ that tells more, where one does. */
  readonly see?: string;
  /** Why no code in src/ emits it (kept for readers of old reports and logs), when none does. */
  readonly unused?: string;
}

export type Extra = Partial<Pick<CatalogueEntry, 'exit' | 'http' | 'see' | 'unused'>>;
const entry =
  (kind: ErrorKind, exit: 1 | 2) =>
  (meaning: string, extra: Extra = {}): CatalogueEntry => ({ kind, exit, meaning, ...extra });
export const invalid = entry('invalid', 2);
export const refused = entry('refused', 2);
export const stalled = entry('stalled', 1);
export const waiting = entry('waiting', 1);
export const transient = entry('transient', 1);
/** An answer of the API: keystonectl exits 2 for a 400 or a 404 (what it was asked was wrong), else 1. */
export const api = (kind: ErrorKind, http: number, meaning: string, extra: Extra = {}): CatalogueEntry => ({
  kind,
  exit: http === 400 || http === 404 ? 2 : 1,
  http,
  meaning,
  see: 'api.md',
  ...extra,
});

// The options of a GitNotesReporter: where the notes go, how they are signed, and the limits of a delivery. Apart from
// git-notes-reporter.ts, whose delivery is long enough on its own; test fixtures build these options too.
import type { ReportSigner } from '../identity/report-signature.js';
import type { NotesCacheBoundOptions } from './notes-cache-bound.js';
import type { NotesFetchLimits } from './notes-fetch.js';

export interface GitNotesReporterOptions {
  /** An http(s) URL of the remote, or the path of a local repository (work tree or bare). */
  repository: string;
  /** Remote only: the bare cache repository notes commits are built in (created when missing), e.g. `<state-dir>/notes.git`. */
  cacheDir?: string;
  /** Remote only: sent as Basic auth with the token as the password. */
  token?: string;
  /** Basic-auth user name sent with the token; default `x-access-token` (GitHub's; others ignore it). */
  username?: string;
  /** The outbox key; default `git-notes`. */
  name?: string;
  /** Per delivery (all its fetches and pushes); default 30 s. */
  timeoutMs?: number;
  /** Push attempts when the server holds other values of this device's refs than the cache says; default 5. */
  pushAttempts?: number;
  /** Author and committer of the notes commits; default `Keystone <keystone@localhost>`. */
  author?: { name: string; email: string };
  /** ms clock for the notes commit time; default Date.now. */
  now?: () => number;
  /** Remote: the limits of a fetch of this device's notes ref from the server; default DEFAULT_NOTES_FETCH_LIMITS. */
  fetchLimits?: Partial<NotesFetchLimits>;
  /** Remote: when the notes cache is compacted (notes-cache-bound.ts). */
  cacheBound?: NotesCacheBoundOptions;
  /** Signs every entry and rollout ref with the device's report key (SPEC §15); absent: unsigned, as earlier agents. */
  signer?: ReportSigner;
  /** The device's certificate text, published in its notes tree (note-commit.ts CERTIFICATE_ENTRY). */
  certificate?: string;
}

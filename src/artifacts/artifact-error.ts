// Artifact and unpack failures: each threat or fault has its own stable code, and the data to act on it.
import { CodedError } from '../core/errors.js';

/** Every code the artifact edge throws. Stable: the reconcile, the CLI and tests branch on them. */
export type ArtifactCode =
  | 'KS_ARTIFACT_UNSIGNED'
  | 'KS_ARTIFACT_DIGEST_MISMATCH'
  | 'KS_ARTIFACT_TOO_LARGE'
  | 'KS_ARTIFACT_FETCH_FAILED'
  | 'KS_ARTIFACT_NOT_FOUND'
  | 'KS_ARTIFACT_BAD_URI'
  | 'KS_ARTIFACT_INSTALL_UNSAFE'
  | 'KS_UNPACK_UNSAFE_ENTRY'
  | 'KS_UNPACK_TOO_LARGE'
  | 'KS_UNPACK_TOO_DEEP'
  | 'KS_UNPACK_FORMAT';

/** Why an archive entry was refused: `KS_UNPACK_UNSAFE_ENTRY` always carries one, so reports can say what the attack was. */
export type UnsafeEntryReason =
  | 'parent-directory'
  | 'absolute-path'
  | 'symlink'
  | 'hardlink'
  | 'character-device'
  | 'block-device'
  | 'fifo'
  | 'socket'
  | 'unsupported-type'
  | 'backslash'
  | 'nul-byte'
  | 'empty-name'
  | 'path-too-long'
  | 'duplicate'
  | 'file-directory-conflict';

/** What an ArtifactError knows beyond its message; every field is optional and only set where it means something. */
export interface ArtifactErrorData {
  /** The artifact's URI as written in the recipe (credentials removed). */
  uri?: string;
  /** The digest the recipe signed, and the digest of what was received. */
  expected?: string;
  actual?: string;
  /** The limit that was passed (bytes, entries or depth) and how far the input got. */
  limit?: number;
  received?: number;
  /** The HTTP status of a failed fetch. */
  status?: number;
  /** The archive entry name, exactly as stored in the archive. */
  entry?: string;
  reason?: UnsafeEntryReason;
  depth?: number;
  /** The directory an install into was refused (KS_ARTIFACT_INSTALL_UNSAFE). */
  path?: string;
}

/** Thrown by the artifact edge: callers branch on `code` and read `data`, never parse the message. */
export class ArtifactError extends CodedError<ArtifactCode, ArtifactErrorData> {
  override readonly name = 'ArtifactError';
}

/** Narrowing helper for catch blocks and tests: `isArtifactError(e, 'KS_UNPACK_TOO_LARGE')`. */
export function isArtifactError(e: unknown, code?: ArtifactCode): e is ArtifactError {
  return e instanceof ArtifactError && (code === undefined || e.code === code);
}

// The one thing loading needs from a source: read a repository file by path, safely and with a size cap.
import type { ErrorCode } from '../core/errors.js';

export type ReadResult =
  | { ok: true; bytes: Uint8Array }
  | {
      ok: false;
      code: Extract<ErrorCode, 'KS_FILE_NOT_FOUND' | 'KS_NOT_A_FILE' | 'KS_PATH_ESCAPE' | 'KS_FILE_TOO_LARGE'>;
      message: string;
    };

export interface RepoReader {
  /** What was read, for people: `directory /srv/fleet` or `git main (3f2a1c0)`. */
  readonly label: string;
  /**
   * Reads a repository-relative path; never follows a link out of the repository. `cache`: an object a caller keeps
   * for a batch of reads (a Git reader then parses a pack once for all of them, not once a file: the rollout gate
   * reads hundreds of certificates at a time), dropped with the batch so no pack stays in memory.
   */
  readFile(path: string, maxBytes: number, o?: { cache?: object }): Promise<ReadResult>;
}

/** Recipes and plans are small; a larger file is an attack or a mistake, refused before parsing. */
export const MAX_DOCUMENT_BYTES = 1024 * 1024;

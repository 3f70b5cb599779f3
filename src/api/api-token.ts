// The API's bearer token (SPEC §10): `<state-dir>/api-token`, made once with 32 random bytes, mode 0600, and never
// rewritten, so that keystonectl and scripts that read it keep working across agent restarts.
import { CodedError } from '../core/errors.js';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { API_TOKEN_FILE } from '../state-dir/layout.js';
import { checkOwnFile, safeDirectory } from '../state-dir/safe-path.js';

export { API_TOKEN_FILE };
/** Shorter than this (an operator's own token) is too easy to guess to guard a device. */
const MIN_TOKEN_LENGTH = 32;

export class ApiTokenError extends CodedError<'KS_API_TOKEN_INVALID', object> {
  constructor(message: string) {
    super('KS_API_TOKEN_INVALID', message);
  }
}

export interface ApiToken {
  token: string;
  path: string;
  /** True when this call created the file. */
  created: boolean;
  /** Set when the existing file is readable by its group or every user: worth a warning, not a refusal (a writable one is refused). */
  readableByOthers?: boolean;
}

/** Reads the token, creating the file first if there is none. Never logs or returns the token anywhere else. */
export function ensureApiToken(stateDir: string, random: (n: number) => Buffer = randomBytes): ApiToken {
  // Through directories no other user can change, and no link (KS_STATE_DIR_UNSAFE): the name then stays ours.
  safeDirectory(stateDir, { mode: 0o700 });
  const path = join(stateDir, API_TOKEN_FILE);
  if (existsSync(path)) return readToken(path);
  // Written whole to a private temporary file, then linked into place: link() fails if the name exists, so two
  // agents starting at once cannot both create it, an existing token is never overwritten, and a crash midway
  // never leaves an empty token file behind.
  const token = random(32).toString('hex');
  const tmp = join(stateDir, `.${API_TOKEN_FILE}.${process.pid}.${random(6).toString('hex')}`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${token}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return readToken(path);
  } finally {
    rmSync(tmp, { force: true });
  }
  return { token, path, created: true };
}

function readToken(path: string): ApiToken {
  // O_NOFOLLOW: a symlink planted in the state directory does not make the agent trust another file.
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP')
      throw new ApiTokenError(`${path} is a symbolic link; the API token must be a regular file`);
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new ApiTokenError(`${path} is not a regular file`);
    // A token another user planted (or could rewrite) would let them steer the agent: refused, never used.
    checkOwnFile(path, st, `remove it, and the agent makes a new one`);
    const token = readFileSync(fd, 'utf8').trim();
    if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))
      throw new ApiTokenError(
        `${path} must hold one token of at least ${MIN_TOKEN_LENGTH} characters without spaces; remove it to have a new one made`,
      );
    return { token, path, created: false, ...((st.mode & 0o044) !== 0 && { readableByOthers: true }) };
  } finally {
    closeSync(fd);
  }
}

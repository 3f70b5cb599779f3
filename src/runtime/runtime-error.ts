// Runtime failures with stable codes: the executor and supervisor branch on `code`, never on message text.
import { CodedError } from '../core/errors.js';

/** Every code the process runtime throws. Stable: reports, the CLI and tests depend on them. */
export type RuntimeCode =
  | 'KS_INSTALL_FAILED'
  | 'KS_INSTALL_TIMEOUT'
  | 'KS_INSTALL_ABORTED'
  | 'KS_START_FAILED'
  | 'KS_STOP_FAILED'
  | 'KS_USER_UNKNOWN'
  | 'KS_ROOT_NOT_PERMITTED'
  | 'KS_WORK_DIR_UNREACHABLE'
  | 'KS_WORK_DIR_INVALID'
  | 'KS_WRONG_RUNTIME'
  // Secrets (SPEC §16), where a component starts: each names the component and the secret, never a value.
  | 'KS_SECRET_UNAVAILABLE'
  | 'KS_SECRET_NOT_TEXT'
  | 'KS_SECRET_PATH_TAKEN'
  | 'KS_SECRET_FILE_FAILED';

/** What a RuntimeError knows beyond its message; fields are set only where they mean something. */
export interface RuntimeErrorData {
  component?: string;
  exitCode?: number | null;
  signal?: string | null;
  timeoutMs?: number;
  user?: string;
  command?: string;
  pid?: number;
  path?: string;
  /** A secret's name (never its value). */
  secret?: string;
}

/** Thrown by the process runtime: callers branch on `code` and read `data`. */
export class RuntimeError extends CodedError<RuntimeCode, RuntimeErrorData> {
  override readonly name = 'RuntimeError';
}

/** Narrowing helper for catch blocks and tests: `isRuntimeError(e, 'KS_START_FAILED')`. */
export function isRuntimeError(e: unknown, code?: RuntimeCode): e is RuntimeError {
  return e instanceof RuntimeError && (code === undefined || e.code === code);
}

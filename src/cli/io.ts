// What a command may touch of the outside world, passed in so tests run commands in-process.
import { CodedError, type ErrorCode } from '../core/errors.js';
import { randomBytes } from 'node:crypto';

export interface CliIo {
  stdout: { write(s: string): unknown; isTTY?: boolean; on?(event: 'error', fn: (e: Error) => void): unknown };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  cwd: string;
  env: Record<string, string | undefined>;
  /** Standard input, for password prompts; absent in tests and CI. */
  stdin?: NodeJS.ReadStream;
  /** Milliseconds since the epoch (injected so signing times are testable). */
  now?: () => number;
  randomBytes?: (n: number) => Uint8Array;
}

export const nowMs = (io: CliIo) => (io.now ?? Date.now)();
export const random = (io: CliIo) => io.randomBytes ?? ((n: number) => new Uint8Array(randomBytes(n)));

/** Exit codes of SPEC §9. */
export const EXIT = { OK: 0, FAILED: 1, BAD_INPUT: 2 } as const;

/** A wrong flag or argument: exit code 2 with the usage line. `code`: a stable code of its own, printed after the message. */
export class UsageError extends CodedError<ErrorCode, object> {
  constructor(message: string, code: ErrorCode = 'KS_USAGE') {
    super(code, message);
  }

  /** A command line the program does not take, whatever the code that says why. */
  override get exitCode(): 2 {
    return 2;
  }
}

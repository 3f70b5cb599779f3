// What a command may touch of the outside world, passed in so tests run commands in-process.

export interface CliIo {
  stdout: { write(s: string): unknown; isTTY?: boolean };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  cwd: string;
  env: Record<string, string | undefined>;
}

/** Exit codes of SPEC §9. */
export const EXIT = { OK: 0, FAILED: 1, BAD_INPUT: 2 } as const;

/** A wrong flag or argument: exit code 2 with the usage line. */
export class UsageError extends Error {
  readonly code = 'KS_USAGE';
}

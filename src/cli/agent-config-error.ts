// Problems of the agent's configuration file (`keystone agent --config FILE`), told the way recipe problems are:
// file, TOML path and line, with a stable code. The codes the recipe vocabulary (core/errors.ts CODES) has no word for
// are the configuration's own, below.
import { CodedError, formatDiagnostic, sortDiagnostics, type Diagnostic, type ErrorCode } from '../core/errors.js';

export const CONFIG_CODES = {
  /** A token, password or secret written in the file itself (a key of its own, or in a URL): it belongs in a file the configuration names. */
  SECRET_INLINE: 'KS_CONFIG_SECRET_INLINE',
  /** Both `repo` and `dir`, or neither: the agent follows exactly one source. */
  SOURCE: 'KS_CONFIG_SOURCE',
  /** Two keys that exclude each other (`dir` with a Git-only key, `allow-unsigned` with `trusted-key`, …). */
  CONFLICT: 'KS_CONFIG_CONFLICT',
  /**
   * A configuration file another user could change: owned by them, writable by a group or others, or in (or reached
   * through a link or a directory) they could change (runtime/trusted-file.ts). Whoever edits it decides what the
   * agent (root) allows.
   */
  UNSAFE: 'KS_CONFIG_UNSAFE',
  /** A file the configuration names exists but cannot be read (permissions, I/O). */
  FILE_UNREADABLE: 'KS_FILE_UNREADABLE',
  /** A trusted key file that is not a minisign public key (the trust layer's own codes: KS_KEY_MALFORMED, KS_WEAK_KEY). */
  KEY_MALFORMED: 'KS_KEY_MALFORMED',
  WEAK_KEY: 'KS_WEAK_KEY',
  /** `docker-socket` / `podman-socket` naming a path that is not there or is not a socket (cli/engine-args.ts). */
  ENGINE_SOCKET_MISSING: 'KS_ENGINE_SOCKET_MISSING',
  /** `docker-socket` / `podman-socket` that is not an absolute path (a tcp:// or ssh:// URL, a relative path). */
  ENGINE_SOCKET_INVALID: 'KS_ENGINE_SOCKET_INVALID',
} as const;

export type ConfigCode = ErrorCode | (typeof CONFIG_CODES)[keyof typeof CONFIG_CODES];

/** A Diagnostic whose code may also be one of CONFIG_CODES. */
export type ConfigDiagnostic = Omit<Diagnostic, 'code'> & { code: ConfigCode };

/** `/etc/keystone/agent.toml:12: poll: "5x" is not a duration (…) [KS_BAD_DURATION]`: the line recipes print. */
export function formatConfigDiagnostic(d: ConfigDiagnostic): string {
  // The formatting reads the code as text only; the cast widens nothing it relies on.
  return formatDiagnostic(d as Diagnostic);
}

/** Every problem of one configuration file; the CLI's error boundary prints them and exits 2. */
export class AgentConfigError extends CodedError<'KS_INVALID_CONFIG', object> {
  readonly diagnostics: ConfigDiagnostic[];

  /** `outcome`: what did not happen because of it ("nothing was started", "nothing was written"). */
  constructor(
    readonly file: string,
    diagnostics: readonly ConfigDiagnostic[],
    outcome = 'nothing was started',
  ) {
    const sorted = sortDiagnostics(diagnostics as Diagnostic[]) as ConfigDiagnostic[];
    super(
      'KS_INVALID_CONFIG',
      `the configuration file ${file} is invalid (${sorted.length} error${sorted.length === 1 ? '' : 's'}); ${outcome}\n` +
        sorted.map((d) => `  ${formatConfigDiagnostic(d)}`).join('\n'),
    );
    this.diagnostics = sorted;
  }
}

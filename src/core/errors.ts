// Diagnostics and errors with stable codes: callers branch on `code`, never on message text.
import { catalogued, type ErrorCode } from './error-catalogue.js';

export type { ErrorCode } from './error-catalogue.js';

/**
 * The validation and load codes by short name: a view of the catalogue (error-catalogue.ts), which lists every code
 * with its kind, exit code and meaning. Stable: scripts and tests depend on them.
 */
export const CODES = {
  TOML_SYNTAX: 'KS_TOML_SYNTAX',
  UNKNOWN_KEY: 'KS_UNKNOWN_KEY',
  MISSING_FIELD: 'KS_MISSING_FIELD',
  INVALID_TYPE: 'KS_INVALID_TYPE',
  INVALID_VALUE: 'KS_INVALID_VALUE',
  BAD_DURATION: 'KS_BAD_DURATION',
  BAD_SEMVER: 'KS_BAD_SEMVER',
  BAD_SEMVER_RANGE: 'KS_BAD_SEMVER_RANGE',
  BAD_NAME: 'KS_BAD_NAME',
  BAD_HEALTH_CHECK: 'KS_BAD_HEALTH_CHECK',
  BAD_CAPABILITY: 'KS_BAD_CAPABILITY',
  ARTIFACT_UNSIGNED: 'KS_ARTIFACT_UNSIGNED',
  ARTIFACT_BAD_URI: 'KS_ARTIFACT_BAD_URI',
  PROCESS_FIELD_ON_CONTAINER: 'KS_PROCESS_FIELD_ON_CONTAINER',
  CONTAINER_FIELD_ON_PROCESS: 'KS_CONTAINER_FIELD_ON_PROCESS',
  DUPLICATE_COMPONENT: 'KS_DUPLICATE_COMPONENT',
  PATH_ESCAPE: 'KS_PATH_ESCAPE',
  FILE_NOT_FOUND: 'KS_FILE_NOT_FOUND',
  FILE_TOO_LARGE: 'KS_FILE_TOO_LARGE',
  NOT_A_FILE: 'KS_NOT_A_FILE',
  DEP_MISSING: 'KS_DEP_MISSING',
  DEP_AMBIGUOUS: 'KS_DEP_AMBIGUOUS',
  DEP_VERSION_MISMATCH: 'KS_DEP_VERSION_MISMATCH',
  DEP_CYCLE: 'KS_DEP_CYCLE',
  GIT_REF_NOT_FOUND: 'KS_GIT_REF_NOT_FOUND',
  GIT_READ_FAILED: 'KS_GIT_READ_FAILED',
  USAGE: 'KS_USAGE',
  // Composite services, configuration, exports and binds (SPEC §12).
  RECIPE_KIND: 'KS_RECIPE_KIND',
  MEMBER_UNKNOWN: 'KS_MEMBER_UNKNOWN',
  COMPOSITE_NESTED: 'KS_COMPOSITE_NESTED',
  TEMPLATE_SYNTAX: 'KS_TEMPLATE_SYNTAX',
  CONFIG_UNKNOWN: 'KS_CONFIG_UNKNOWN',
  CONFIG_NOT_SCALAR: 'KS_CONFIG_NOT_SCALAR',
  CONFIG_OVERRIDE_UNKNOWN: 'KS_CONFIG_OVERRIDE_UNKNOWN',
  BIND_UNKNOWN: 'KS_BIND_UNKNOWN',
  EXPORT_COLLISION: 'KS_EXPORT_COLLISION',
  // Configuration values are data (SPEC §6): a placeholder where one quoted shell word would not be exactly its value.
  TEMPLATE_SHELL_CONTEXT: 'KS_TEMPLATE_SHELL_CONTEXT',
  // Fleets (SPEC §13): fleet.toml and the device's own labels.
  BAD_LABEL: 'KS_BAD_LABEL',
  FLEET_MISSING: 'KS_FLEET_MISSING',
  FLEET_DUPLICATE_TARGET: 'KS_FLEET_DUPLICATE_TARGET',
  FLEET_TARGET_EMPTY: 'KS_FLEET_TARGET_EMPTY',
  FLEET_PLAN_INVALID: 'KS_FLEET_PLAN_INVALID',
  FLEET_PLAN_PATH: 'KS_FLEET_PLAN_PATH',
  FLEET_UNKNOWN_COMPONENT: 'KS_FLEET_UNKNOWN_COMPONENT',
  FLEET_NO_TARGET: 'KS_FLEET_NO_TARGET',
  // Rollouts (SPEC §14): fleet.toml's [rollout].
  ROLLOUT_DUPLICATE_WAVE: 'KS_ROLLOUT_DUPLICATE_WAVE',
  ROLLOUT_WAVE_RULE: 'KS_ROLLOUT_WAVE_RULE',
  ROLLOUT_PERCENTS: 'KS_ROLLOUT_PERCENTS',
  // Secrets (SPEC §16): `{{secret.NAME}}` only in an environment variable's value; files by [[lifecycle.run.secrets]].
  SECRET_PLACEMENT: 'KS_SECRET_PLACEMENT',
  SECRET_FILE: 'KS_SECRET_FILE',
  // Agent updates (SPEC §17): fleet.toml's [agent]; refusals of a package on the device (agent-update/).
  AGENT_PACKAGE_DIGEST: 'KS_AGENT_PACKAGE_DIGEST',
  AGENT_NO_PACKAGE: 'KS_AGENT_NO_PACKAGE',
  AGENT_PACKAGE_INVALID: 'KS_AGENT_PACKAGE_INVALID',
  AGENT_DOWNGRADE: 'KS_AGENT_DOWNGRADE',
  AGENT_UNSIGNED: 'KS_AGENT_UNSIGNED',
  AGENT_PACKAGE_VERSION: 'KS_AGENT_PACKAGE_VERSION',
  AGENT_UPDATE_FAILED: 'KS_AGENT_UPDATE_FAILED',
} as const satisfies Record<string, ErrorCode>;

/** One problem found in a revision: where it is (file, TOML path, line) and what to do about it. */
export interface Diagnostic {
  code: ErrorCode;
  message: string;
  file: string;
  /** TOML path as rendered by formatTomlPath, e.g. `lifecycle.run.health.interval`; "" for the whole file. */
  path: string;
  line?: number;
  column?: number;
  hint?: string;
}

/** Orders diagnostics by file, then line, then path, so output is deterministic whatever order checks ran in. */
export function sortDiagnostics(diags: readonly Diagnostic[]): Diagnostic[] {
  return [...diags].sort(
    (a, b) =>
      cmp(a.file, b.file) ||
      (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER) ||
      cmp(a.path, b.path) ||
      cmp(a.code, b.code) ||
      cmp(a.message, b.message),
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `recipes/x.toml:12: lifecycle.run.health.interval: ... [KS_BAD_DURATION]` — the one line a person reads. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line !== undefined ? `${d.file}:${d.line}` : d.file;
  const path = d.path ? ` ${d.path}:` : '';
  const hint = d.hint ? ` (${d.hint})` : '';
  return `${where}:${path} ${d.message}${hint} [${d.code}]`;
}

/**
 * The base of every error that carries a code (the catalogue, error-catalogue.ts, lists them all): callers branch on
 * `code` and read `data`, never parse the message. Each edge names its own subclass, codes and data; exitCodeOf
 * (below) turns one into the exit code of a program.
 */
export class CodedError<C extends string, D extends object> extends Error {
  constructor(
    readonly code: C,
    message: string,
    readonly data: D = {} as D,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** What a program exits with when this error ends it: the catalogue's exit code for the code, 1 for a code it lacks. */
  get exitCode(): 1 | 2 {
    return catalogued(this.code)?.exit ?? 1;
  }
}

/** Thrown by the edges when a revision cannot be used; carries every diagnostic, not just the first. */
export class InvalidRevisionError extends CodedError<'KS_INVALID_REVISION', object> {
  constructor(readonly diagnostics: Diagnostic[]) {
    super(
      'KS_INVALID_REVISION',
      `the revision is invalid (${diagnostics.length} error${diagnostics.length === 1 ? '' : 's'}):\n` +
        diagnostics.map((d) => '  ' + formatDiagnostic(d)).join('\n'),
    );
  }
}

/** An operation failed for a reason outside the input (I/O, Git): exit code 1, not 2. */
export class OperationError extends CodedError<ErrorCode, object> {
  constructor(code: ErrorCode, message: string) {
    super(code, message);
  }

  /** Whatever its code (KS_USAGE from a Git setting, KS_FILE_NOT_FOUND from sign): the operation failed. */
  override get exitCode(): 1 {
    return 1;
  }
}

/**
 * The exit code of a failure that ends keystone or keystonectl (SPEC §9: 1 the operation failed, 2 bad input): a
 * coded error's (the catalogue's, error-catalogue.ts, unless its class says otherwise); node:util parseArgs's refusal
 * of a command line is bad input; anything else failed.
 */
export function exitCodeOf(err: unknown): 1 | 2 {
  if (err instanceof CodedError) return err.exitCode;
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS') ? 2 : 1;
}

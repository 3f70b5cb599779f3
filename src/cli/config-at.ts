// Where a setting's value is, for its rule (agent-config-rules.ts): a key of the configuration file, or a flag. The
// rules and the checks they share (named-file-checks.ts) report through it, in the voice of wherever the value came from.
import type { TomlPath } from '../core/toml-locate.js';
import type { ConfigCode } from './agent-config-error.js';

/**
 * What a refused flag says instead of the file's message: the words the flag has said since before the configuration
 * file existed (scripts and people know them), or the error to throw as it is (a code of its own). Undefined:
 * `--flag: message`.
 */
export type FlagWords = string | Error | undefined;

/** Where a value is, and how to report a problem with it (always returns undefined, so a check can `return at.problem(…)`). */
export interface At {
  path: TomlPath;
  /** The configuration file's directory, or the working directory for a flag. */
  dir: string;
  /** The flag as typed (`--poll`) when the value came from the command line; undefined for the configuration file. */
  flag?: string;
  problem(code: ConfigCode, message: string, hint?: string, flagWords?: FlagWords): undefined;
}

/** A check of a string value: the value as the agent takes it (a path made absolute), or undefined after reporting. */
export type Check = (text: string, at: At) => string | undefined;

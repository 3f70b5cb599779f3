// The agent's configuration file (`keystone agent --config /etc/keystone/agent.toml`): one TOML table whose keys are
// the agent's flags. Read, parsed and validated the way a recipe is (file, TOML path, line, stable code), so that a
// device is never started on a half-understood configuration; `keystone init` writes files with the same loader's
// approval, and `keystone doctor` reads them with it.
import { readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import * as v from 'valibot';
import { strictObject } from '../core/valid.js';
import { CODES, type ErrorCode } from '../core/errors.js';
import { parseTomlDocument } from '../core/toml-document.js';
import { trustedFileProblem } from '../runtime/trusted-file.js';
import { formatTomlPath } from '../core/format-toml-path.js';
import type { TomlPath } from '../core/toml-locate.js';
import { COMBINATIONS } from './agent-config-combinations.js';
import { CONFIG_CODES, type ConfigCode, type ConfigDiagnostic } from './agent-config-error.js';
import { CONFIG_RULES, inlineSecretHint, type At, type ConfigValue } from './agent-config-rules.js';
import type { AgentOptionName } from './agent-option-table.js';

/** A configuration file is a screenful of keys; anything near this size is the wrong file. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

export type AgentConfigValues = Partial<Record<AgentOptionName, ConfigValue>>;

export interface AgentConfig {
  file: string;
  /** The keys the file sets, as the agent's flags would carry them (paths absolute); only meaningful without diagnostics. */
  values: AgentConfigValues;
  /** Every problem found, not just the first; empty when the file is valid. */
  diagnostics: ConfigDiagnostic[];
}

const RULE_KEYS = Object.keys(CONFIG_RULES) as AgentOptionName[];

/** Strict, so that an unknown key is reported with a "did you mean" the way recipes do; the values are the rules' business. */
const SCHEMA = strictObject(Object.fromEntries(RULE_KEYS.map((k) => [k, v.optional(v.unknown())])));

/**
 * Reads and validates a configuration file. Never throws: every problem, the file's own included, is a diagnostic.
 * `checkOwner: false` reads a file another user could change (doctor, which reports that as a check of its own).
 */
export function readAgentConfig(file: string, { checkOwner = true }: { checkOwner?: boolean } = {}): AgentConfig {
  const fail = (code: ConfigCode, message: string, hint?: string): AgentConfig => ({
    file,
    values: {},
    diagnostics: [{ code, message, file, path: '', ...(hint && { hint }) }],
  });
  let bytes: Buffer;
  try {
    const st = statSync(file);
    if (!st.isFile()) return fail(CODES.NOT_A_FILE, 'the configuration is not a file');
    // Whoever could change the file, or put another in its place, decides what the agent (root) allows.
    const unsafe = checkOwner ? trustedFileProblem({ path: file, role: 'config' }) : undefined;
    if (unsafe)
      return fail(CONFIG_CODES.UNSAFE, `${unsafe.problem}, so they could decide what the agent allows`, unsafe.fix);
    if (st.size > MAX_CONFIG_BYTES)
      return fail(CODES.FILE_TOO_LARGE, `the configuration file is ${st.size} bytes, more than ${MAX_CONFIG_BYTES}`);
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      return fail(
        CODES.FILE_NOT_FOUND,
        'the configuration file does not exist',
        'keystone init --config FILE writes a first one',
      );
    return fail(
      CONFIG_CODES.FILE_UNREADABLE,
      `the configuration file cannot be read (${code ?? (e as Error).message})`,
    );
  }
  return parseAgentConfig(file, bytes);
}

/** Validates a configuration's bytes as the file `file` (whose directory relative paths are taken from). Never throws. */
export function parseAgentConfig(file: string, bytes: Uint8Array | string): AgentConfig {
  const text = typeof bytes === 'string' ? bytes : decodeUtf8(bytes);
  if (typeof text !== 'string')
    return {
      file,
      values: {},
      diagnostics: [
        {
          code: CODES.TOML_SYNTAX,
          message: 'invalid TOML: the file is not UTF-8 text',
          file,
          path: '',
          line: text.line,
        },
      ],
    };
  const doc = parseTomlDocument(file, text, SCHEMA);
  const raw = doc.raw as Record<string, unknown> | undefined;
  if (raw === undefined) return { file, values: {}, diagnostics: doc.diagnostics };
  const diagnostics: ConfigDiagnostic[] = [];
  const report = (path: TomlPath, code: ConfigCode, message: string, hint?: string): undefined => {
    // The locator and the message shape are the recipes'; the code may be one of the configuration's own.
    diagnostics.push({ ...doc.diagnostic(code as ErrorCode, path, message, hint), code });
    return undefined;
  };

  // A secret written inline is its own mistake, not a typo to suggest a near key for.
  const secretKeys = new Set<string>();
  for (const key of Object.keys(raw)) {
    if (Object.hasOwn(CONFIG_RULES, key)) continue;
    const hint = inlineSecretHint(key);
    if (hint === undefined) continue;
    secretKeys.add(formatTomlPath([key]));
    report([key], CONFIG_CODES.SECRET_INLINE, 'a secret written in the configuration, where secrets never go', hint);
  }
  diagnostics.push(...doc.diagnostics.filter((d) => !(d.code === CODES.UNKNOWN_KEY && secretKeys.has(d.path))));

  const dir = dirname(file);
  const values: AgentConfigValues = {};
  for (const key of RULE_KEYS) {
    if (!Object.hasOwn(raw, key)) continue;
    const at = (index?: number): At => {
      const path = index === undefined ? [key] : [key, index];
      return { path, dir, problem: (code, message, hint) => report(path, code, message, hint) };
    };
    const value = CONFIG_RULES[key](raw[key], at);
    if (value !== undefined) values[key] = value;
  }
  // What the agent refuses about keys together, said here with the line (a refusal at start-up has none).
  const has = (key: AgentOptionName) => Object.hasOwn(raw, key);
  const settings = {
    value: (key: AgentOptionName) => values[key],
    has,
    bad: (key: AgentOptionName) => has(key) && values[key] === undefined,
  };
  for (const combination of COMBINATIONS)
    combination.check(settings, (path, code, message, hint) => report(path, code, message, hint));
  return { file, values, diagnostics };
}

/** The text, or the line of the first byte that is not UTF-8. */
function decodeUtf8(bytes: Uint8Array): string | { line: number } {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    return decoder.decode(bytes);
  } catch {
    let line = 1;
    let start = 0;
    for (let i = 0; i <= bytes.length; i++) {
      if (i < bytes.length && bytes[i] !== 0x0a) continue;
      try {
        decoder.decode(bytes.subarray(start, i));
      } catch {
        return { line };
      }
      line++;
      start = i + 1;
    }
    return { line: 1 };
  }
}

// The agent's options: one table for `keystone agent`, `keystone doctor` (which checks what the agent would run with)
// and the configuration file (whose keys are the flags' names).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AgentConfigError } from './agent-config-error.js';
import { readAgentConfig } from './agent-config.js';
import { UsageError, type CliIo } from './io.js';

export { AGENT_OPTIONS, type AgentOptionName } from './agent-option-table.js';
import { AGENT_OPTIONS, type AgentOptionName } from './agent-option-table.js';

/** `--config FILE`: outside AGENT_OPTIONS, since the file's keys are those options and a file cannot name another. */
export const CONFIG_OPTION = { config: { type: 'string' } } as const;

/** What `parseArgs` gives for the table: the defaulted options are always set. */
export type AgentOptionValues = ReturnType<
  typeof parseArgs<{ allowPositionals: true; options: typeof AGENT_OPTIONS }>
>['values'];

export interface ParsedAgentOptions {
  values: AgentOptionValues;
  positionals: string[];
  /** The configuration file the values were read from (`--config`), when one was given. */
  configFile?: string;
}

type OptionValue = string | boolean | string[] | boolean[];

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** The table without its defaults, so that what the command line gave can be told from what it left out. */
const GIVEN_OPTIONS: OptionsConfig = { ...CONFIG_OPTION };
const DEFAULTS: Record<string, OptionValue> = {};
for (const [name, { default: value, ...option }] of Object.entries(AGENT_OPTIONS as OptionsConfig)) {
  GIVEN_OPTIONS[name] = option;
  if (value !== undefined) DEFAULTS[name] = value;
}

/**
 * Two keys are one choice each: a command line that makes the choice replaces the file's (`--dir` beside a file with
 * `repo`, `--allow-unsigned` beside a file with `trusted-key`), rather than adding to it and being refused. (`--no-allow-unsigned`
 * makes no choice.)
 */
const CHOICES: ReadonlyArray<readonly AgentOptionName[]> = [
  ['repo', 'dir'],
  ['trusted-key', 'allow-unsigned'],
];

/** The configuration the Debian package's service runs the agent with (packaging/keystone.service). */
export const INSTALLED_CONFIG = '/etc/keystone/agent.toml';

/**
 * The agent's options as a command run beside it reads them (`keystone doctor`, `keystone identity`): parseAgentOptions,
 * and when the command line names no configuration and no source (no --config, --repo or --dir), the installed
 * configuration file where there is one, so that the bare command on a device speaks of what the service runs.
 */
export function parseOptionsBesideAgent(
  argv: string[],
  io: CliIo,
  opts: { checkConfigOwner?: boolean } = {},
): ParsedAgentOptions {
  const bare = !argv.some((a) => ['--config', '--repo', '--dir'].includes(a.split('=')[0]!));
  const installed = bare && existsSync(INSTALLED_CONFIG) ? ['--config', INSTALLED_CONFIG] : [];
  return parseAgentOptions([...installed, ...argv], io, opts);
}

/**
 * The agent's options: the command line, over the configuration file (`--config FILE`, whose keys are the flags'
 * names), over the defaults. A repeatable flag on the command line replaces the file's list; `--no-FLAG` turns off a
 * boolean the file turns on. An invalid file throws AgentConfigError (every problem, with file, TOML path and line).
 * No environment variable names a configuration file: the agent reads the one it is told to, or none.
 * `checkConfigOwner: false` (doctor) reads a file another user could change, to report that among its checks.
 */
export function parseAgentOptions(
  argv: string[],
  io: CliIo,
  opts: { checkConfigOwner?: boolean } = {},
): ParsedAgentOptions {
  const { values: parsed, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    allowNegative: true,
    options: GIVEN_OPTIONS,
  });
  const { config, ...given } = parsed as Record<string, OptionValue | undefined>;
  if (config === undefined) return { values: { ...DEFAULTS, ...given } as AgentOptionValues, positionals };
  if (typeof config !== 'string' || config === '')
    throw new UsageError('--config takes the configuration file, e.g. /etc/keystone/agent.toml');
  const configFile = resolve(io.cwd, config);
  const loaded = readAgentConfig(configFile, { checkOwner: opts.checkConfigOwner ?? true });
  if (loaded.diagnostics.length) throw new AgentConfigError(configFile, loaded.diagnostics);
  const fromFile: Record<string, OptionValue | undefined> = { ...loaded.values };
  for (const choice of CHOICES)
    if (choice.some((name) => given[name] !== undefined && given[name] !== false))
      for (const name of choice) delete fromFile[name];
  return { values: { ...DEFAULTS, ...fromFile, ...given } as AgentOptionValues, positionals, configFile };
}

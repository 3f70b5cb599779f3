// The command line's voice of the agent's rules: each flag given goes through its key's rule (agent-config-rules.ts)
// and the combinations it takes part in (agent-config-combinations.ts), the ones the configuration file's values went
// through when the file was read. A refusal is the flag's own message, a UsageError (exit 2), before anything starts.
// A value is checked once: the file's values were checked when it was read, and are not looked at again here.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { COMBINATIONS, type Settings } from './agent-config-combinations.js';
import { CONFIG_RULES, type At, type ConfigValue, type FlagWords } from './agent-config-rules.js';
import {
  AGENT_OPTIONS,
  CONFIG_OPTION,
  type AgentOptionName,
  type AgentOptionValues,
  type ParsedAgentOptions,
} from './agent-options.js';
import { UsageError, type CliIo } from './io.js';

declare const checked: unique symbol;

/** The agent's options once every value in them has passed its rule: what agent-settings.ts converts. */
export type CheckedAgentValues = AgentOptionValues & { readonly [checked]: true };

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** The table without its defaults: what the command line itself gave (agent-options.ts merges; this tells them apart). */
const GIVEN_OPTIONS: OptionsConfig = { ...CONFIG_OPTION };
for (const [name, { default: _default, ...option }] of Object.entries(AGENT_OPTIONS as OptionsConfig))
  GIVEN_OPTIONS[name] = option;

const RULE_KEYS = Object.keys(CONFIG_RULES) as AgentOptionName[];

/** The flag voice's At: a problem is thrown at once, in the flag's words. */
function flagAt(key: AgentOptionName, index: number | undefined, cwd: string): At {
  const flag = `--${key}`;
  return {
    path: index === undefined ? [key] : [key, index],
    dir: cwd,
    flag,
    problem(_code, message, _hint, words?: FlagWords) {
      throw words instanceof Error ? words : new UsageError(words ?? `${flag}: ${message}`);
    },
  };
}

/** Runs one flag's value through its key's rule: the value as the agent takes it (a path made absolute), or a throw. */
export function checkFlag(key: AgentOptionName, value: ConfigValue, io: Pick<CliIo, 'cwd'>): ConfigValue {
  // A refusal throws; a rule returns undefined only after saying why.
  return CONFIG_RULES[key](value, (index) => flagAt(key, index, io.cwd))!;
}

/**
 * The values of parseAgentOptions(argv) with every flag of `argv` checked (and its paths made absolute), and the
 * combinations a flag takes part in; without a configuration file, all of them. Throws UsageError (or the error a
 * flag has always thrown, with its code) for the first problem.
 */
export function checkAgentFlags(
  argv: string[],
  parsed: ParsedAgentOptions,
  io: Pick<CliIo, 'cwd'>,
): CheckedAgentValues {
  if (parsed.positionals.length) throw new UsageError(`unexpected argument ${parsed.positionals[0]}`);
  const { values: flags } = parseArgs({
    args: argv,
    allowPositionals: true,
    allowNegative: true,
    options: GIVEN_OPTIONS,
  });
  const given = new Set(RULE_KEYS.filter((key) => (flags as Record<string, unknown>)[key] !== undefined));
  const values: Record<string, unknown> = { ...parsed.values };
  for (const key of RULE_KEYS) if (given.has(key)) values[key] = checkFlag(key, values[key] as ConfigValue, io);
  const settings: Settings = {
    value: (key) => values[key] as ConfigValue | undefined,
    has: (key) => values[key] !== undefined,
    bad: () => false,
  };
  for (const combination of COMBINATIONS) {
    // The file's own combinations were checked when it was read: only those a flag changes are looked at again.
    if (parsed.configFile !== undefined && !combination.keys.some((key) => given.has(key))) continue;
    combination.check(settings, (_path, _code, _message, _hint, words) => {
      throw words instanceof Error ? words : new UsageError(words);
    });
  }
  return values as CheckedAgentValues;
}

// The agent's options: one table for `keystone agent`, `keystone doctor` (which checks what the agent would run with)
// and the configuration file (whose keys are the flags' names).
import { parseArgs } from 'node:util';
import { POLICY_OPTIONS } from './policy-args.js';
import { TRUST_OPTIONS } from './trust-args.js';
import type { CliIo } from './io.js';

export const AGENT_OPTIONS = {
  dir: { type: 'string' },
  repo: { type: 'string' },
  plan: { type: 'string' },
  ref: { type: 'string' },
  'state-dir': { type: 'string', default: '/var/lib/keystone' },
  listen: { type: 'string' },
  'listen-public': { type: 'boolean', default: false },
  socket: { type: 'string' },
  device: { type: 'string' },
  label: { type: 'string', multiple: true },
  poll: { type: 'string' },
  concurrency: { type: 'string' },
  grace: { type: 'string', default: '10s' },
  'log-format': { type: 'string' },
  'stop-on-exit': { type: 'boolean', default: false },
  settle: { type: 'string', default: '300ms' },
  'max-backoff': { type: 'string', default: '60s' },
  'crash-loop-limit': { type: 'string', default: '10' },
  'healthy-spell': { type: 'string', default: '10m' },
  'log-max-bytes': { type: 'string', default: '10485760' },
  'log-keep': { type: 'string', default: '5' },
  'git-token-file': { type: 'string' },
  status: { type: 'string' },
  'status-repo': { type: 'string' },
  'github-repo': { type: 'string' },
  'github-token-file': { type: 'string' },
  'github-api': { type: 'string' },
  'webhook-secret-file': { type: 'string' },
  'allow-history-rewrite': { type: 'boolean', default: false },
  'on-failure': { type: 'string', default: 'none' },
  ...POLICY_OPTIONS,
  ...TRUST_OPTIONS,
} as const;


const parseCommandLine = (argv: string[]) => parseArgs({ args: argv, allowPositionals: true, options: AGENT_OPTIONS });

export type AgentOptionValues = ReturnType<typeof parseCommandLine>['values'];

export interface ParsedAgentOptions {
  values: AgentOptionValues;
  positionals: string[];
  /** The configuration file the values were read from (`--config`), when one was given. */
  configFile?: string;
}

/**
 * The agent's options from its command line, with their defaults. (`--config FILE` is being added: the file's keys
 * are these flags' names, and flags given on the command line override it.)
 */
export function parseAgentOptions(argv: string[], _io: CliIo): ParsedAgentOptions {
  const { values, positionals } = parseCommandLine(argv);
  return { values, positionals };
}

// The agent's options as one table: `keystone agent`'s flags, and the configuration file's keys (the flags' names).
// A leaf, so that the checks of the configuration file can name an option without importing the parser that reads it.
import { ENGINE_OPTIONS } from './engine-args.js';
import { POLICY_OPTIONS } from './policy-args.js';
import { TRUST_OPTIONS } from './trust-args.js';

export const AGENT_OPTIONS = {
  dir: { type: 'string' },
  repo: { type: 'string' },
  plan: { type: 'string' },
  ref: { type: 'string' },
  'state-dir': { type: 'string', default: '/var/lib/keystone' },
  listen: { type: 'string' },
  'listen-public': { type: 'boolean', default: false },
  socket: { type: 'string' },
  dashboard: { type: 'boolean', default: true },
  device: { type: 'string' },
  label: { type: 'string', multiple: true },
  poll: { type: 'string' },
  concurrency: { type: 'string' },
  grace: { type: 'string', default: '10s' },
  'log-format': { type: 'string' },
  'stop-on-exit': { type: 'boolean', default: false },
  // SPEC §17: install the agent version a signed fleet.toml names; root on this device for whoever signs the repository.
  'allow-agent-update': { type: 'boolean', default: false },
  // SPEC §19: when this device applies a new revision ("mon,tue 02:00-04:00 Europe/Berlin"); a fleet target's wins.
  window: { type: 'string' },
  settle: { type: 'string', default: '300ms' },
  'max-backoff': { type: 'string', default: '60s' },
  'crash-loop-limit': { type: 'string', default: '10' },
  'healthy-spell': { type: 'string', default: '10m' },
  'log-max-bytes': { type: 'string', default: '10485760' },
  'log-keep': { type: 'string', default: '5' },
  'git-token-file': { type: 'string' },
  status: { type: 'string' },
  'status-repo': { type: 'string' },
  'status-token-file': { type: 'string' },
  'github-repo': { type: 'string' },
  'github-token-file': { type: 'string' },
  'github-api': { type: 'string' },
  'webhook-secret-file': { type: 'string' },
  'allow-history-rewrite': { type: 'boolean', default: false },
  'on-failure': { type: 'string', default: 'none' },
  // The device's identity (SPEC §15): the operator keys that sign certificates, and this device's own given locally.
  'enrollment-key': { type: 'string', multiple: true },
  certificate: { type: 'string' },
  ...POLICY_OPTIONS,
  // Where the container engines listen (SPEC §18).
  ...ENGINE_OPTIONS,
  ...TRUST_OPTIONS,
} as const;

export type AgentOptionName = keyof typeof AGENT_OPTIONS;

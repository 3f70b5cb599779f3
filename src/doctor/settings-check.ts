// Would `keystone agent` take these settings at all? The agent runs every flag through its key's rule and the
// combinations it takes part in (cli/agent-flags.ts), then converts them (cli/agent-settings.ts), and refuses to start
// (exit 2) at the first problem. Doctor runs the very same functions (the CLI hands their verdict over: this room never
// reads a command line) and says the agent's own words: `--listen 0.0.0.0:8080` without `--listen-public`,
// `--window bogus`, a --threshold the keys cannot meet. The configuration file's own values went through the same rules
// when it was read (a file that does not validate is bad input, exit 2, before any check); who may change the file and
// the keys is the trusted-files check's.
import { fail, pass, type CheckResult } from './check-result.js';

/** What the agent's checks of its settings said: nothing, or the first refusal with its code. */
export type SettingsVerdict = { ok: true; configFile?: string } | { ok: false; message: string; code?: string };

/**
 * Runs `agentChecks` (the agent's own: checkAgentFlags, then agentSettings) and keeps its refusal. A refusal is an error
 * with a code (UsageError's KS_USAGE, a TrustError's, an engine socket's); anything else is a bug and is thrown.
 */
export function settingsVerdict(agentChecks: () => unknown, configFile?: string): SettingsVerdict {
  try {
    agentChecks();
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (!(e instanceof Error) || typeof code !== 'string') throw e;
    return { ok: false, message: e.message, ...(code.startsWith('KS_') && { code }) };
  }
  return { ok: true, ...(configFile !== undefined && { configFile }) };
}

/** The `settings` line. */
export function checkSettings(verdict: SettingsVerdict): CheckResult {
  if (verdict.ok)
    return pass(
      'settings',
      `keystone agent takes every setting given${verdict.configFile !== undefined ? ` (the command line and ${verdict.configFile})` : ''}: each through its rule, and their combinations`,
    );
  return fail(
    'settings',
    `keystone agent refuses to start (exit 2): ${verdict.message}`,
    'change that flag (or its key in the configuration file) as the message says: until then keystone agent does not start',
    verdict.code,
  );
}

// Which files the agent's options make it trust (runtime/trusted-file.ts says how each is judged): the configuration
// file, the trusted keys (releases' and enrolment's), and every secret given by file. `keystone agent` refuses to start on a key or configuration
// another user could change and warns about a secret another user could read or change; `keystone doctor` fails both.
import { resolve } from 'node:path';
import {
  describeProblem,
  TrustedFileError,
  trustedFileProblems,
  type TrustedFileProblem,
  type TrustedFileRef,
} from '../runtime/trusted-file.js';
import { AGENT_OPTIONS, type AgentOptionName, type AgentOptionValues } from './agent-options.js';
import type { CliIo } from './io.js';

/** `git-token-file`, `github-token-file`, `webhook-secret-file`…: every option that names a file holding a secret. */
const SECRET_FILE_OPTIONS = (Object.keys(AGENT_OPTIONS) as AgentOptionName[]).filter((name) =>
  /-(token|secret)-file$/.test(name),
);

/** The files `values` make the agent trust, as the agent resolves them (from io.cwd; the file's own paths are absolute). */
export function trustedFilesOf(values: AgentOptionValues, io: CliIo, configFile?: string): TrustedFileRef[] {
  const refs: TrustedFileRef[] = [];
  if (configFile !== undefined) refs.push({ path: configFile, role: 'config', what: 'the configuration file' });
  if (!values['allow-unsigned'])
    for (const key of values['trusted-key'] ?? [])
      refs.push({ path: resolve(io.cwd, key), role: 'trusted-key', what: 'trusted-key' });
  // Whoever could change an enrolment key could enrol devices of their own making: it is trusted as a release key is.
  for (const key of values['enrollment-key'] ?? [])
    refs.push({ path: resolve(io.cwd, key), role: 'trusted-key', what: 'enrollment-key' });
  for (const name of SECRET_FILE_OPTIONS) {
    const file = values[name];
    if (typeof file === 'string' && file !== '') refs.push({ path: resolve(io.cwd, file), role: 'secret', what: name });
  }
  return refs;
}

/**
 * The agent's judgement: throws TrustedFileError (exit code 2, nothing started) when a trusted key or the configuration
 * could be changed by another user; returns the secrets' problems, which the agent warns about and runs with (a
 * device that ran yesterday with a 0644 token file keeps running, and says so at every start).
 */
export function checkAgentFiles(refs: readonly TrustedFileRef[]): TrustedFileProblem[] {
  const problems = trustedFileProblems(refs);
  const refused = problems.filter((p) => p.role !== 'secret');
  if (refused.length > 0) {
    const lines = refused.map((p) => `${p.role === 'config' ? 'configuration' : 'trusted key'}: ${describeProblem(p)}`);
    throw new TrustedFileError(
      refused[0]!.code,
      `another user could change a file the agent trusts; nothing was started\n  ${lines.join('\n  ')}`,
      { problems: refused },
    );
  }
  return problems;
}

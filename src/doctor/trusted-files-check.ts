// The files the agent trusts without making them (runtime/trusted-file.ts: the configuration, the trusted keys, the
// secrets given by file) and the API token it made: each one, and every directory and link on the way to it, such that
// no other user could change it (sshd's rule), nor read a secret. A key or configuration that fails stops the agent;
// a secret that fails is only warned about at its start, but a device that lets another user read its credentials is
// not ready either.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { API_TOKEN_FILE } from '../state-dir/layout.js';
import { agentUid, describeUid } from '../state-dir/safe-path.js';
import { trustedFileProblems, type TrustedFileRef } from '../runtime/trusted-file.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import type { DoctorSetup } from './doctor-setup.js';

/** `setup.trustedFiles` as the CLI lists them; without a list, the trusted keys alone (the setup's own). */
export function checkTrustedFiles(setup: Pick<DoctorSetup, 'trustedFiles' | 'trust' | 'stateDir'>): CheckResult {
  const keys = setup.trust.unsigned
    ? []
    : setup.trust.keyFiles.map((path): TrustedFileRef => ({ path, role: 'trusted-key', what: 'trusted-key' }));
  const refs = [...(setup.trustedFiles ?? keys)];
  const stateDir = setup.stateDir;
  // The agent refuses an API token another user could change (state-dir); that others can read it is this check's.
  const apiToken = join(stateDir, API_TOKEN_FILE);
  if (existsSync(apiToken)) refs.push({ path: apiToken, role: 'secret', what: 'the API token' });
  if (refs.length === 0) return skip('trusted-files', 'no configuration file, trusted key or secret file is given');
  const problems = trustedFileProblems(refs);
  if (problems.length > 0) {
    const fixes = [...new Set(problems.map((p) => p.fix))];
    return fail('trusted-files', problems.map((p) => p.problem).join('; '), fixes.join('; '), problems[0]!.code);
  }
  const names = refs.map(
    (r) =>
      `${r.role === 'config' ? 'the configuration file' : r.what === 'enrollment-key' ? 'enrollment key' : r.role === 'trusted-key' ? 'trusted key' : r.what} ${r.path}`,
  );
  const who = agentUid() === 0 ? 'root' : `root or ${describeUid(agentUid())}`;
  return pass(
    'trusted-files',
    `${names.join(', ')}: only ${who} can change them${refs.some((r) => r.role === 'secret') ? ', and no other user can read the secrets' : ''}`,
  );
}

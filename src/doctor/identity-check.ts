// The device's own keys (identity/ in the state directory, SPEC §15) as the agent will judge them at its start
// (identity/device-keys.ts: the same reader, which writes nothing): there, parsing, 0700/0600 and the agent's user's.
// No keys yet is no fault: the agent makes them at its first start.
import { agentUid, describeUid } from '../state-dir/safe-path.js';
import { IdentityError } from '../identity/identity-error.js';
import { identityPaths, readDevicePublicIdentity } from '../identity/device-keys.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import { splitFix } from './state-dir-check.js';

export async function checkIdentity(stateDir: string): Promise<CheckResult> {
  const { dir } = identityPaths(stateDir);
  try {
    const id = await readDevicePublicIdentity(stateDir);
    if (id === undefined)
      return skip(
        'identity',
        `no keys yet in ${dir}: the agent makes them at its first start (keystone identity makes them now, to enrol the device first)`,
      );
    return pass(
      'identity',
      `${dir}: report key ${id.reportKey} (id ${id.reportKeyId}), age recipient ${id.ageRecipient}; key files 0600 of ${describeUid(agentUid())}`,
    );
  } catch (e) {
    if (!(e instanceof IdentityError))
      return fail(
        'identity',
        `${dir} cannot be read: ${(e as Error).message}`,
        `run doctor as the agent's user, and make ${dir} that user's (chmod 700)`,
      );
    // The agent's refusals end with their fix after a colon; one that does not keeps its whole text as the problem.
    const { problem, fix } = splitFix(e.message);
    return fail(
      'identity',
      problem,
      fix ?? `move ${dir} aside to make a new identity (then enrol the device again)`,
      e.code,
    );
  }
}

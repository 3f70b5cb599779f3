// Runs every check of `keystone doctor` against one setup and the machine's facts, and returns them in CHECK_IDS order.
// Nothing here writes: not the state directory, not the repository, not the Git cache.
import { readAppliedState } from './applied-state.js';
import { CHECK_IDS, skip, type CheckResult } from './check-result.js';
import { checkClock } from './clock-check.js';
import { checkContainerEngine } from './container-engine-check.js';
import { checkPlan, currentPlan, type CurrentPlan } from './current-plan.js';
import { checkDiskSpace } from './disk-space-check.js';
import type { DoctorFacts } from './doctor-facts.js';
import type { DoctorSetup } from './doctor-setup.js';
import { checkEnrollment } from './enrollment-check.js';
import { checkFirstRevision } from './first-revision-check.js';
import { checkGitRemote } from './git-remote-check.js';
import { checkIdentity } from './identity-check.js';
import { checkNodeVersion } from './node-version-check.js';
import { checkPushAccess } from './push-access-check.js';
import { checkRunUsers, processComponents, runUsersOf } from './run-users-check.js';
import { checkSetpriv } from './setpriv-check.js';
import { checkSettings } from './settings-check.js';
import { checkSource } from './source-check.js';
import { checkStateDirectory } from './state-dir-check.js';
import { checkTrustedFiles } from './trusted-files-check.js';
import { checkTrustedKeys } from './trusted-keys-check.js';
import { checkWorkDirReach } from './work-dir-reach-check.js';

export async function runDoctor(setup: DoctorSetup, facts: DoctorFacts): Promise<CheckResult[]> {
  const source = checkSource(setup.source);
  const applied = readAppliedState(setup.stateDir);
  // A source that is not usable has no plan to speak of: said once, at `source`.
  const plan: CurrentPlan =
    source.status === 'fail'
      ? { kind: 'unknown', why: 'not known: the source is not usable (see source)' }
      : await currentPlan(setup, applied);
  const db = await facts.userDb();
  const users = runUsersOf(processComponents(plan), facts.agent, db, setup.allowRoot);
  // The slow ones (a remote, an engine's ping, setpriv's start) run side by side.
  const results = await Promise.all([
    checkSettings(setup.settings),
    checkNodeVersion(facts.nodeVersion),
    checkSetpriv(facts.setprivPath),
    source,
    checkStateDirectory(setup.stateDir),
    checkDiskSpace(setup.stateDir, facts),
    checkTrustedKeys(setup.trust),
    checkTrustedFiles(setup),
    checkIdentity(setup.stateDir),
    checkEnrollment(setup, applied, facts.now()),
    source.status === 'fail'
      ? skip('git-remote', 'no usable source (see source)')
      : checkGitRemote(setup.source, facts.gitTimeoutMs),
    source.status === 'fail'
      ? skip('push-access', 'no usable source (see source)')
      : checkPushAccess(setup.source, facts.gitTimeoutMs),
    checkPlan(plan, setup),
    checkFirstRevision(setup, applied, source.status !== 'fail', facts.now()),
    checkRunUsers(plan, users, facts.agent),
    checkWorkDirReach({ plan, users, stateDir: setup.stateDir, agent: facts.agent, db }),
    checkContainerEngine(plan, facts),
    checkClock(applied, facts.now(), setup.stateDir),
  ]);
  return results.sort((a, b) => CHECK_IDS.indexOf(a.check) - CHECK_IDS.indexOf(b.check));
}

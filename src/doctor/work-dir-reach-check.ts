// Every process's run user can get through the directories above its work directory (runtime/work-dir-reach.ts, the
// check the agent makes before it applies): else the program is not even found ("Cannot find module", crash-looping).
// Without a known plan the device's default run user stands in for the recipes' users.
import { componentPaths } from '../state-dir/layout.js';
import { buildPrivileges, type AgentIdentity, type RunIdentity } from '../runtime/privileges.js';
import type { UserDb } from '../state-dir/user-db.js';
import { blockingAncestor } from '../runtime/work-dir-reach.js';
import { fail, pass, skip, type CheckResult } from './check-result.js';
import type { CurrentPlan } from './current-plan.js';
import { describeIdentity, type RunUser } from './run-users-check.js';

export async function checkWorkDirReach(opts: {
  plan: CurrentPlan;
  users: readonly RunUser[];
  stateDir: string;
  agent: AgentIdentity;
  db: UserDb;
}): Promise<CheckResult> {
  const { plan, stateDir } = opts;
  if (opts.agent.uid !== 0)
    return pass(
      'work-dir-reach',
      `components run as the agent's own user (uid ${opts.agent.uid}), who reaches its state directory`,
    );
  let who: Array<{ name: string; identity: RunIdentity }>;
  let standIn = false;
  if (plan.kind === 'known') {
    who = opts.users.flatMap((u) =>
      'identity' in u && u.switchesUser ? [{ name: u.component.name, identity: u.identity }] : [],
    );
    if (who.length === 0) return pass('work-dir-reach', 'no process of the plan runs as another user than the agent');
  } else {
    let identity: RunIdentity;
    try {
      const p = buildPrivileges(undefined, opts.agent, opts.db);
      identity = p.identity;
    } catch {
      return skip(
        'work-dir-reach',
        'no plan to read the run users from, and the device has no default run user to check with',
      );
    }
    who = [{ name: 'component', identity }];
    standIn = true;
  }
  const blocked = new Map<string, { dir: string; mode: number; users: Set<string>; components: string[] }>();
  for (const w of who) {
    const b = await blockingAncestor(componentPaths(stateDir, w.name).workDir, w.identity);
    if (!b) continue;
    const entry = blocked.get(b.dir) ?? { dir: b.dir, mode: b.mode, users: new Set<string>(), components: [] };
    entry.users.add(describeIdentity(w.identity));
    entry.components.push(w.name);
    blocked.set(b.dir, entry);
  }
  const under = `${stateDir}/components`;
  if (blocked.size === 0) {
    const users = [...new Set(who.map((w) => describeIdentity(w.identity)))].join(', ');
    return pass(
      'work-dir-reach',
      standIn
        ? `the default run user ${users} can reach ${under}/… (no plan to read the recipes' users from: only the default was checked)`
        : `${users} can reach their work directories under ${under}`,
    );
  }
  const first = [...blocked.values()][0]!;
  const detail = [...blocked.values()]
    .map(
      (b) =>
        `${[...b.users].join(', ')} cannot reach ${standIn ? `work directories under ${under}` : `the work directories of ${b.components.join(', ')}`}: ${b.dir} (mode ${b.mode.toString(8).padStart(4, '0')}) does not let ${b.users.size === 1 ? 'it' : 'them'} through`,
    )
    .join('; ');
  return fail(
    'work-dir-reach',
    detail,
    `use a state directory every run user can traverse (--state-dir /var/lib/keystone; for the example: KEYSTONE_STATE_DIR=/var/tmp/keystone-example npm start), or chmod o+x ${first.dir}`,
    'KS_WORK_DIR_UNREACHABLE',
  );
}

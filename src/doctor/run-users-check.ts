// The run users and groups of the plan's processes exist, resolved exactly as the process runtime resolves them
// (runtime/privileges.ts): a recipe's `user[:group]`, or the device's unprivileged default for a recipe naming none.
import type { DesiredComponent } from '../core/desired-state.js';
import { buildPrivileges, type AgentIdentity, type RunIdentity } from '../runtime/privileges.js';
import { RuntimeError } from '../runtime/runtime-error.js';
import type { UserDb } from '../state-dir/user-db.js';
import { fail, pass, skip, warn, type CheckResult } from './check-result.js';
import type { CurrentPlan } from './current-plan.js';

/** A process component and who it runs as, or why that cannot be said. */
export type RunUser =
  | { component: DesiredComponent; identity: RunIdentity; switchesUser: boolean }
  | { component: DesiredComponent; error: RuntimeError };

export function processComponents(plan: CurrentPlan): DesiredComponent[] {
  return plan.kind === 'known' ? plan.state.components.filter((c) => c.recipe.lifecycle.run.type !== 'container') : [];
}

export function runUsersOf(
  components: readonly DesiredComponent[],
  agent: AgentIdentity,
  db: UserDb,
  allowRoot: boolean,
): RunUser[] {
  return components.map((c) => {
    try {
      const p = buildPrivileges(c.recipe.lifecycle.run.security, agent, db, { allowRoot });
      return { component: c, identity: p.identity, switchesUser: p.switchesUser };
    } catch (e) {
      if (e instanceof RuntimeError) return { component: c, error: e };
      throw e;
    }
  });
}

export const describeIdentity = (id: RunIdentity) =>
  id.name !== undefined ? `${id.name} (uid ${id.uid})` : `uid ${id.uid}`;

export function checkRunUsers(plan: CurrentPlan, users: readonly RunUser[], agent: AgentIdentity): CheckResult {
  if (plan.kind === 'unknown') return skip('run-users', `the plan is ${plan.why}`);
  if (plan.kind === 'invalid') return skip('run-users', 'the plan does not load (see plan)');
  if (users.length === 0) return pass('run-users', 'the plan runs no processes (containers run as their image says)');
  const failed = users.filter((u): u is Extract<RunUser, { error: RuntimeError }> => 'error' in u);
  if (failed.length) {
    const code = failed[0]!.error.code;
    const detail = failed.map((u) => `${u.component.name} (${u.component.recipePath}): ${u.error.message}`).join('; ');
    const fix =
      code === 'KS_ROOT_NOT_PERMITTED'
        ? 'name a user other than root in the recipe, or allow root process users on this device (--allow-root)'
        : "create the user and group (adduser --system --group NAME), or name an existing user in the recipe's [lifecycle.run.security] user";
    return fail('run-users', detail, fix, code);
  }
  const byUser = new Map<string, string[]>();
  for (const u of users as Array<Extract<RunUser, { identity: RunIdentity }>>) {
    const who = `${describeIdentity(u.identity)}, gid ${u.identity.gid}`;
    byUser.set(who, [...(byUser.get(who) ?? []), u.component.name]);
  }
  const list = [...byUser].map(([who, names]) => `${who}: ${names.join(', ')}`).join('; ');
  // The agent's own start-up warning, said here too: as another user it cannot change to the recipes' users.
  if (agent.uid !== 0)
    return warn(
      'run-users',
      `the agent is not root (uid ${agent.uid}): components run as ${list}; recipe users and capabilities are not applied`,
      "run the agent as root for the recipes' users and capabilities to apply",
    );
  return pass('run-users', list);
}

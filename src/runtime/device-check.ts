// Everything only this device can say about a revision, before anything of it runs: the device policy, mount sources
// and engine facts for containers, and whether each process's run user can reach its work directory. And what it
// warns of without refusing: components that read secrets and share their run user (shared-run-users.ts).
import type { DevicePolicy } from '../core/device-policy.js';
import type { DesiredComponent, DesiredState } from '../core/desired-state.js';
import { checkDevicePolicy, withFlagHint, type PolicyHost } from '../core/policy-check.js';
import { sharedRunUsers, type RunUser, type SharedRunUser } from '../core/shared-run-users.js';
import type { ContainerIssue } from './container-check.js';
import type { ComponentPaths } from './runtime.js';

/** One reason this device refuses a revision: the component, its recipe file, the TOML path, a stable code. */
export interface DeviceIssue {
  component: string;
  file: string;
  path: string;
  code: string;
  message: string;
}

export interface DeviceCheckOptions {
  policy: DevicePolicy;
  host: PolicyHost;
  /** The container runtime's own check (the policy, mount sources). */
  containers: { check(c: DesiredComponent): ContainerIssue[] };
  /**
   * The process runtime's reachability check (see ProcessRuntime.unreachableWorkDir), and who its components run as
   * (ProcessRuntime.runUserOf, agentUser).
   */
  processes: {
    unreachableWorkDir(c: DesiredComponent, paths: ComponentPaths): Promise<string | undefined>;
    runUserOf(c: DesiredComponent): Promise<RunUser | undefined>;
    readonly agentUser: RunUser;
  };
  paths: (name: string) => ComponentPaths;
  /** Told each warning (KS_SECRET_SHARED_USER), which refuses nothing; without it none is worked out. */
  warn?: (w: SharedRunUser) => void;
}

/** Every issue of `state` on this device, in component order; [] when all of it may run here. */
export async function checkDevice(state: DesiredState, o: DeviceCheckOptions): Promise<DeviceIssue[]> {
  const out: DeviceIssue[] = [];
  for (const c of state.components) {
    const of = (i: { path: string; code: string; message: string; hint?: string }) => ({
      component: c.name,
      file: c.recipePath,
      path: i.path,
      code: i.code,
      message: i.hint ? `${i.message} (${i.hint})` : i.message,
    });
    if (c.recipe.lifecycle.run.type === 'container') {
      out.push(...o.containers.check(c).map(of));
      continue;
    }
    out.push(...checkDevicePolicy(c, o.policy, o.host).map((i) => of(withFlagHint(i))));
    const unreachable = await o.processes.unreachableWorkDir(c, o.paths(c.name));
    if (unreachable)
      out.push(
        of({
          path: `${c.runPath ?? 'lifecycle.run'}.security.user`,
          code: 'KS_WORK_DIR_UNREACHABLE',
          message: unreachable,
        }),
      );
  }
  if (o.warn && !out.length) for (const w of await sharedUsers(state, o.processes)) o.warn(w);
  return out;
}

/** The process components that read secrets and share their run user (none looked up when no component reads any). */
async function sharedUsers(state: DesiredState, processes: DeviceCheckOptions['processes']): Promise<SharedRunUser[]> {
  if (!state.components.some((c) => c.secrets?.length && c.recipe.lifecycle.run.type === 'process')) return [];
  const users = new Map<string, RunUser>();
  for (const c of state.components) {
    if (c.recipe.lifecycle.run.type !== 'process') continue;
    const u = await processes.runUserOf(c);
    if (u) users.set(c.name, u);
  }
  return sharedRunUsers(state.components, (c) => users.get(c.name), processes.agentUser);
}

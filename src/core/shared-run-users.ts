// Components that read secrets (SPEC §16) and share their run user with another: a process can read the environment
// (/proc/PID/environ) and the secret files of every other process of its user, so what one of them reads, all of them
// can. Not a refusal (a device may run them so on purpose): one warning per such component, when a revision is taken.
import type { DesiredComponent } from './desired-state.js';

/** Who a component's processes run as on this device. */
export interface RunUser {
  uid: number;
  /** The passwd name, when there is one. */
  name?: string;
}

export interface SharedRunUser {
  code: 'KS_SECRET_SHARED_USER';
  /** The component that reads secrets. */
  component: string;
  /** Its run user, for people: `nobody (uid 65534)`. */
  user: string;
  /** The other components of the desired state that run as that user, in desired-state order. */
  others: string[];
  /** Whether the agent itself runs as that user. */
  agent: boolean;
  message: string;
}

export const describeRunUser = (u: RunUser): string =>
  u.name === undefined ? `uid ${u.uid}` : `${u.name} (uid ${u.uid})`;

/**
 * One warning per component of `components` that reads secrets and runs as a user (by uid) another of them runs as,
 * or the agent does. `runUserOf` says who each component runs as on this device (undefined: not known here — a
 * container, whose user is the image's, or a user the device does not have, which fails the component on its own).
 */
export function sharedRunUsers(
  components: readonly DesiredComponent[],
  runUserOf: (c: DesiredComponent) => RunUser | undefined,
  agent: RunUser,
): SharedRunUser[] {
  const users = new Map<string, RunUser>();
  const byUid = new Map<number, string[]>();
  for (const c of components) {
    const u = runUserOf(c);
    if (!u) continue;
    users.set(c.name, u);
    byUid.set(u.uid, [...(byUid.get(u.uid) ?? []), c.name]);
  }
  const out: SharedRunUser[] = [];
  for (const c of components) {
    const u = users.get(c.name);
    if (!u || !c.secrets?.length) continue;
    const others = byUid.get(u.uid)!.filter((n) => n !== c.name);
    const withAgent = u.uid === agent.uid;
    if (!others.length && !withAgent) continue;
    const user = describeRunUser(
      u.name === undefined && withAgent && agent.name !== undefined ? { ...u, name: agent.name } : u,
    );
    const who = [...others, ...(withAgent ? ['the agent itself'] : [])];
    const fix =
      withAgent && agent.uid !== 0
        ? 'run the agent as root, and give it a user of its own'
        : `give it a user of its own (${c.runPath ?? 'lifecycle.run'}.security.user)`;
    out.push({
      code: 'KS_SECRET_SHARED_USER',
      component: c.name,
      user,
      others,
      agent: withAgent,
      message: `${c.name} reads secrets (${c.secrets.join(', ')}) and runs as ${user}, as ${listed(who)} ${who.length === 1 ? 'does' : 'do'}: each can read its secrets (its environment in /proc/PID/environ, its secret files); ${fix}`,
    });
  }
  return out;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

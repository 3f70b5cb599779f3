// The recipe's `security` table as setpriv(1) options: drop to the run user, no_new_privs, exactly the listed capabilities.
import type { RunSpec } from '../core/recipe.js';
import { RuntimeError } from './runtime-error.js';
import { findGroup, findUser, groupsOf, type UserDb } from './user-db.js';

export type SecuritySpec = NonNullable<RunSpec['security']>;

/** Who a component's processes run as. */
export interface RunIdentity {
  uid: number;
  gid: number;
  /** The passwd name, when there is one. */
  name?: string;
  /** HOME for the component's environment. */
  home: string;
  /** Primary and supplementary gids, for "can the run user execute this" checks. */
  gids: number[];
}

/** The identity of the agent itself (from `process.getuid()` and friends). */
export interface AgentIdentity {
  uid: number;
  gid: number;
  name?: string;
  home: string;
}

/** Everything a spawn needs to apply a recipe's security table. */
export interface Privileges {
  identity: RunIdentity;
  /** setpriv options, to go between the setpriv binary and `--`. */
  setprivArgs: string[];
  /** True when the processes change uid/gid (the agent is root and the run user is another). */
  switchesUser: boolean;
  /** Set when the recipe asked for something the agent cannot grant (it is not root): for the caller to log. */
  note?: string;
}

/** `CAP_NET_BIND_SERVICE` → `net_bind_service`, the spelling setpriv accepts (it refuses the `cap_` prefix). */
export function setprivCapName(cap: string): string {
  return cap.toLowerCase().replace(/^cap_/, '');
}

/** `-all` or `-all,+a,+b`: exactly the listed capabilities, nothing inherited from the agent. */
export function capabilitySetArg(capabilities: readonly string[]): string {
  const names = [...new Set(capabilities.map(setprivCapName))].sort();
  return ['-all', ...names.map((n) => `+${n}`)].join(',');
}

/**
 * Builds the setpriv options for a recipe's `security` (absent = no user change, no_new_privs, no capabilities).
 * As root: `--reuid/--regid` from "user[:group]" (a user without a group gets its primary group),
 * `--init-groups` for a passwd user or `--clear-groups` for a bare numeric uid, `--no-new-privs`, and the
 * capability sets. Not root: the agent's own user, only `--no-new-privs`. Unknown user or group: KS_USER_UNKNOWN.
 */
export function buildPrivileges(security: SecuritySpec | undefined, agent: AgentIdentity, db: UserDb): Privileges {
  const noNewPrivs = security?.no_new_privileges ?? true;
  const caps = security?.capabilities ?? [];
  const nnp = noNewPrivs ? ['--no-new-privs'] : [];

  if (agent.uid !== 0) {
    const wanted: string[] = [];
    if (security?.user !== undefined) wanted.push(`user "${security.user}"`);
    if (caps.length) wanted.push(`capabilities ${caps.join(', ')}`);
    return {
      identity: { uid: agent.uid, gid: agent.gid, name: agent.name, home: agent.home, gids: groupsOf(db, agent.name, agent.gid) },
      setprivArgs: nnp,
      switchesUser: false,
      ...(wanted.length && {
        note: `the agent is not root: this component runs as ${agent.name ?? `uid ${agent.uid}`} without the requested ${wanted.join(' and ')}${noNewPrivs ? ' (no_new_privileges still applies)' : ''}`,
      }),
    };
  }

  const capArgs = [`--inh-caps=${capabilitySetArg(caps)}`, `--ambient-caps=${capabilitySetArg(caps)}`, `--bounding-set=${capabilitySetArg(caps)}`];
  if (security?.user === undefined) {
    return {
      identity: { uid: agent.uid, gid: agent.gid, name: agent.name, home: agent.home, gids: groupsOf(db, agent.name, agent.gid) },
      setprivArgs: [...nnp, ...capArgs],
      switchesUser: false,
    };
  }

  const [userSpec = '', groupSpec] = security.user.split(':');
  const entry = findUser(db, userSpec);
  let uid: number;
  if (entry) uid = entry.uid;
  else if (/^\d+$/.test(userSpec) && groupSpec !== undefined) uid = Number(userSpec);
  else
    throw new RuntimeError(
      'KS_USER_UNKNOWN',
      /^\d+$/.test(userSpec)
        ? `uid ${userSpec} has no passwd entry, so it has no primary group; write "${userSpec}:<group>"`
        : `user "${userSpec}" does not exist on this device (not in /etc/passwd)`,
      { user: security.user },
    );
  let gid: number;
  if (groupSpec === undefined) gid = entry!.gid;
  else {
    const g = findGroup(db, groupSpec);
    if (g) gid = g.gid;
    else if (/^\d+$/.test(groupSpec)) gid = Number(groupSpec);
    else throw new RuntimeError('KS_USER_UNKNOWN', `group "${groupSpec}" does not exist on this device (not in /etc/group)`, { user: security.user });
  }
  return {
    identity: { uid, gid, name: entry?.name, home: entry?.home || '/', gids: entry ? groupsOf(db, entry.name, gid) : [gid] },
    setprivArgs: [`--reuid=${uid}`, `--regid=${gid}`, entry ? '--init-groups' : '--clear-groups', ...nnp, ...capArgs],
    switchesUser: uid !== agent.uid || gid !== agent.gid,
  };
}

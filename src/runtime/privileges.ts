// The recipe's `security` table as setpriv(1) options: drop to the run user, no_new_privs, exactly the listed capabilities.
import { userInfo } from 'node:os';
import { MAX_ID } from '../core/policy-check.js';
import type { RunSpec } from '../core/recipe.js';
import { RuntimeError } from './runtime-error.js';
import { findGroup, findUser, groupsOf, type UserDb } from '../state-dir/user-db.js';

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

/** Who runs a process whose recipe names no user, in order of preference (SPEC §5: never root). */
export const DEFAULT_RUN_USERS = ['keystone', 'nobody'] as const;

/** The device's unprivileged default run user: a `keystone` system user where it exists, else `nobody`. */
export function defaultRunUser(db: UserDb): string | undefined {
  return DEFAULT_RUN_USERS.find((name) => {
    const u = findUser(db, name);
    return u !== undefined && u.uid !== 0;
  });
}

export interface PrivilegeOptions {
  /** The device allows uid or gid 0 for process users (--allow-root). Default false: KS_ROOT_NOT_PERMITTED. */
  allowRoot?: boolean;
}

/**
 * Builds the setpriv options for a recipe's `security` (absent = the default run user, no_new_privs, no capabilities).
 * As root: `--reuid/--regid` from "user[:group]" (a user without a group gets its primary group; no user at all gets
 * the device's default unprivileged user), `--init-groups` for a passwd user or `--clear-groups` for a bare numeric
 * uid, `--no-new-privs`, and the capability sets. Not root: the agent's own user, only `--no-new-privs`. Unknown user
 * or group, or no default user: KS_USER_UNKNOWN; uid or gid 0 without `allowRoot`: KS_ROOT_NOT_PERMITTED.
 */
export function buildPrivileges(
  security: SecuritySpec | undefined,
  agent: AgentIdentity,
  db: UserDb,
  opts: PrivilegeOptions = {},
): Privileges {
  const noNewPrivs = security?.no_new_privileges ?? true;
  const caps = security?.capabilities ?? [];
  const nnp = noNewPrivs ? ['--no-new-privs'] : [];

  if (agent.uid !== 0) {
    const wanted: string[] = [];
    if (security?.user !== undefined) wanted.push(`user "${security.user}"`);
    if (caps.length) wanted.push(`capabilities ${caps.join(', ')}`);
    return {
      identity: {
        uid: agent.uid,
        gid: agent.gid,
        name: agent.name,
        home: agent.home,
        gids: groupsOf(db, agent.name, agent.gid),
      },
      setprivArgs: nnp,
      switchesUser: false,
      ...(wanted.length && {
        note: `the agent is not root: this component runs as ${agent.name ?? `uid ${agent.uid}`} without the requested ${wanted.join(' and ')}${noNewPrivs ? ' (no_new_privileges still applies)' : ''}`,
      }),
    };
  }

  const capArgs = [
    `--inh-caps=${capabilitySetArg(caps)}`,
    `--ambient-caps=${capabilitySetArg(caps)}`,
    `--bounding-set=${capabilitySetArg(caps)}`,
  ];
  // No user named: the device's unprivileged default, never the agent's root (capabilities emptied or not, uid 0
  // still owns every root file).
  const spec = security?.user ?? defaultRunUser(db);
  if (spec === undefined)
    throw new RuntimeError(
      'KS_USER_UNKNOWN',
      `this recipe names no run user and the device has no unprivileged default (neither ${DEFAULT_RUN_USERS.join(' nor ')} exists): create one with \`adduser --system --group keystone\`, or name a user in [lifecycle.run.security]`,
      {},
    );

  const [userSpec = '', groupSpec] = spec.split(':');
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
      { user: spec },
    );
  let gid: number;
  if (groupSpec === undefined) gid = entry!.gid;
  else {
    const g = findGroup(db, groupSpec);
    if (g) gid = g.gid;
    else if (/^\d+$/.test(groupSpec)) gid = Number(groupSpec);
    else
      throw new RuntimeError(
        'KS_USER_UNKNOWN',
        `group "${groupSpec}" does not exist on this device (not in /etc/group)`,
        { user: spec },
      );
  }
  // (uid_t)-1 and beyond: setresuid and chown read them as "leave it as it is", so the process would stay root.
  if (uid > MAX_ID || gid > MAX_ID)
    throw new RuntimeError(
      'KS_USER_UNKNOWN',
      `user "${spec}" has an id beyond ${MAX_ID}, which would leave the process root`,
      { user: spec },
    );
  // The agent refuses such a revision before it runs (the device policy); this is the runtime's own last word.
  if ((uid === 0 || gid === 0) && !opts.allowRoot)
    throw new RuntimeError(
      'KS_ROOT_NOT_PERMITTED',
      `user "${spec}" is ${uid === 0 ? 'uid 0' : 'gid 0'}, and this device does not allow root process users (--allow-root)`,
      { user: spec },
    );
  return {
    identity: {
      uid,
      gid,
      name: entry?.name,
      home: entry?.home || '/',
      gids: entry ? groupsOf(db, entry.name, gid) : [gid],
    },
    setprivArgs: [`--reuid=${uid}`, `--regid=${gid}`, entry ? '--init-groups' : '--clear-groups', ...nnp, ...capArgs],
    switchesUser: uid !== agent.uid || gid !== agent.gid,
  };
}

/** The identity of the current process, from its uid and the passwd database. */
export function currentAgentIdentity(): AgentIdentity {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  try {
    const u = userInfo();
    return { uid, gid, name: u.username, home: u.homedir || process.env.HOME || '/' };
  } catch {
    return { uid, gid, home: process.env.HOME ?? '/' };
  }
}

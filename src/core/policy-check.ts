// The device policy applied to one component: every way its recipe reaches beyond what this device allows, each with
// the TOML path that asks for it and the flag that would allow it. Pure but for the host facts it is handed.
import type { DesiredComponent } from './desired-state.js';
import {
  canonicalHostPath,
  isWithin,
  SAFE_CONTAINER_CAPABILITIES,
  SAFE_PROCESS_CAPABILITIES,
  type DevicePolicy,
} from './device-policy.js';

/** Stable codes of a policy refusal (the revision is refused before anything runs). */
export type PolicyCode =
  | 'KS_CONTAINER_NOT_PERMITTED'
  | 'KS_MOUNT_NOT_PERMITTED'
  | 'KS_CAPABILITY_NOT_PERMITTED'
  | 'KS_DEVICE_NOT_PERMITTED'
  | 'KS_ROOT_NOT_PERMITTED';

export interface PolicyIssue {
  code: PolicyCode;
  message: string;
  /** The TOML path in the recipe: `lifecycle.run.container.mounts[0].source`. */
  path: string;
  /** What would allow it on this device: `--allow-mount /srv/data`. */
  flag: string;
  hint?: string;
}

/** What the check needs to know of the host; injected so that the check stays pure and testable. */
export interface PolicyHost {
  /** The real path of an existing host path (every link resolved); undefined when it does not exist. */
  realpath(path: string): string | undefined;
  /**
   * The uid, gid and every group (primary and supplementary, as `--init-groups` gives them) a process user spec
   * (`nobody`, `998:33`) has on this device; undefined when unknown here.
   */
  resolveUser(spec: string): { uid: number; gid: number; gids?: readonly number[] } | undefined;
  /** Groups whose members are root in all but name: 0, the engine socket's group (`docker`), `disk`. */
  rootGroups?: readonly number[];
  /**
   * Who other than root (or the agent) could change this existing directory (replace an entry with a link), as words
   * (`uid 1000`, `everyone`); undefined when nobody could. Bind mount sources are resolved by the engine again at
   * start, so every directory between the allowed prefix and the source must be beyond others' reach.
   */
  changeableBy?(dir: string): string | undefined;
  /**
   * Host paths no bind mount may reach, in either direction, without --allow-privileged: the container engine's
   * sockets (whoever holds one starts privileged containers) and the agent's state directory (its API token).
   */
  guarded: readonly string[];
}

/** Network modes that are a private namespace (or none): everything else shares someone else's. */
const PRIVATE_NETWORK = new Set(['bridge', 'none', 'default', 'private', 'slirp4netns', 'pasta']);
/** A user-defined network's name: no colon, so no `container:`/`ns:` form can hide in it. */
const NETWORK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** The values of the other namespace modes that keep the namespace private. */
const PRIVATE_MODES: Record<'pid_mode' | 'ipc_mode' | 'uts_mode' | 'userns_mode', ReadonlySet<string>> = {
  pid_mode: new Set(['private']),
  ipc_mode: new Set(['private', 'none', 'shareable']),
  uts_mode: new Set(['private']),
  userns_mode: new Set(['private']),
};

/** Is this network mode a private one (bridge, none, a named network)? `host`, `container:…`, `ns:…` are not. */
export function isPrivateNetwork(mode: string): boolean {
  const m = mode.toLowerCase();
  if (m === 'host') return false;
  return PRIVATE_NETWORK.has(m) || NETWORK_NAME.test(mode);
}

/** The highest id a user or group may have: 4294967295 is (uid_t)-1, "leave unchanged", to setresuid and chown. */
export const MAX_ID = 2147483646;

/** The uid and gid a numeric container user spec names (`"65534:65534"`, `"1000"`); undefined for names. */
function numericUser(spec: string | undefined): { uid: number; gid?: number } | undefined {
  const m = spec === undefined ? null : /^(\d+)(?::(\d+))?$/.exec(spec);
  if (!m) return undefined;
  return { uid: Number(m[1]), ...(m[2] !== undefined && { gid: Number(m[2]) }) };
}

/**
 * Every way `c` reaches beyond `policy`, in field order; [] when the device allows all of it. Processes: capabilities
 * beyond the safe set, a root user. Containers: privileged, host namespaces, bind mounts outside the allowed prefixes
 * or reaching a guarded path, devices, capabilities, and root with a writable host mount.
 */
export function checkDevicePolicy(c: DesiredComponent, policy: DevicePolicy, host: PolicyHost): PolicyIssue[] {
  const run = c.recipe.lifecycle.run;
  const base = c.runPath ?? 'lifecycle.run';
  const out: PolicyIssue[] = [];
  const allowedCaps = new Set(policy.allowCapabilities);
  const capabilityIssues = (caps: readonly string[], safe: ReadonlySet<string>, at: string) =>
    caps.forEach((cap, i) => {
      if (safe.has(cap) || allowedCaps.has(cap)) return;
      out.push({
        code: 'KS_CAPABILITY_NOT_PERMITTED',
        message: `${c.name} asks for ${cap}, which is beyond the safe default set and not allowed on this device`,
        path: `${at}[${i}]`,
        flag: `--allow-capability ${cap}`,
      });
    });

  if (run.type !== 'container') {
    const sec = run.security;
    const rootGroups = new Set([0, ...(host.rootGroups ?? [])]);
    if (sec?.user !== undefined && !policy.allowRoot) {
      const ids: { uid: number; gid: number; gids?: readonly number[] } | undefined =
        host.resolveUser(sec.user) ?? numericProcessUser(sec.user);
      const why = !ids
        ? undefined
        : ids.uid === 0
          ? 'uid 0'
          : ids.uid > MAX_ID || ids.gid > MAX_ID
            ? 'an id beyond the range of ids, which setpriv and chown read as "leave it as it is": root'
            : [ids.gid, ...(ids.gids ?? [])].some((g) => rootGroups.has(g))
              ? `a member of group ${[ids.gid, ...(ids.gids ?? [])].find((g) => rootGroups.has(g))}, which is root in all but name (gid 0, the container engine's socket, raw disks)`
              : undefined;
      if (why)
        out.push({
          code: 'KS_ROOT_NOT_PERMITTED',
          message: `${c.name} asks to run as user "${sec.user}" (${why}), and this device does not allow root process users`,
          path: `${base}.security.user`,
          flag: '--allow-root',
          hint: "name an unprivileged user (without one, the process runs as the device's default unprivileged user)",
        });
    }
    // Without no_new_privs a setuid program (sudo, su, pkexec) can make the process root.
    if (sec?.no_new_privileges === false && !policy.allowRoot)
      out.push({
        code: 'KS_ROOT_NOT_PERMITTED',
        message: `${c.name} asks for no_new_privileges = false, with which a setuid program (sudo, su) can make it root`,
        path: `${base}.security.no_new_privileges`,
        flag: '--allow-root',
        hint: 'leave no_new_privileges at true',
      });
    capabilityIssues(sec?.capabilities ?? [], SAFE_PROCESS_CAPABILITIES, `${base}.security.capabilities`);
    return out;
  }

  const spec = run.container;
  if (!spec) return out;
  const at = (field: string) => `${base}.container.${field}`;
  if (!policy.allowHostNamespaces) {
    if (!isPrivateNetwork(spec.network_mode))
      out.push({
        code: 'KS_CONTAINER_NOT_PERMITTED',
        message: `${c.name} asks for network_mode = "${spec.network_mode}" (${describeShared(spec.network_mode)}'s network namespace), which this device does not allow`,
        path: at('network_mode'),
        flag: '--allow-host-namespaces',
        hint: 'use "bridge" with ports',
      });
    for (const field of ['pid_mode', 'ipc_mode', 'uts_mode', 'userns_mode'] as const) {
      const mode = spec[field];
      if (mode === undefined || PRIVATE_MODES[field].has(mode)) continue;
      out.push({
        code: 'KS_CONTAINER_NOT_PERMITTED',
        message: `${c.name} asks for ${field} = "${mode}" (${describeShared(mode)}'s ${field.replace('_mode', '')} namespace), which this device does not allow`,
        path: at(field),
        flag: '--allow-host-namespaces',
        hint: `use "${[...PRIVATE_MODES[field]][0]}" or leave it out`,
      });
    }
  }

  if (spec.privileged && !policy.allowPrivileged)
    out.push({
      code: 'KS_CONTAINER_NOT_PERMITTED',
      message: `${c.name} asks for privileged = true, which this device does not allow`,
      path: at('privileged'),
      flag: '--allow-privileged',
      hint: 'grant only the capabilities it needs with capabilities = [...]',
    });
  const prefixes = expand(policy.allowMounts, host);
  const guarded = expand(host.guarded, host);
  let writableMount = -1;
  spec.mounts.forEach((m, i) => {
    const source = canonicalHostPath(m.source);
    if (source === undefined) return; // not absolute: refused by the runtime's own check (KS_MOUNT_SOURCE_INVALID)
    const real = host.realpath(source) ?? source;
    const seen = [...new Set([source, real])];
    const reaches = guarded.find((g) => seen.some((s) => isWithin(s, g) || isWithin(g, s)));
    if (reaches !== undefined && !policy.allowPrivileged)
      out.push({
        code: 'KS_MOUNT_NOT_PERMITTED',
        message: `${c.name} mounts ${m.source}${real !== source ? ` (${real})` : ''}, which reaches ${reaches} (the container engine's socket or the agent's state: host root)`,
        path: at(`mounts[${i}].source`),
        flag: '--allow-privileged',
      });
    else if (seen.every((s) => prefixes.some((p) => isWithin(s, p)))) {
      const prefix = prefixes.filter((p) => isWithin(real, p)).sort((a, b) => b.length - a.length)[0];
      const open = prefix === undefined ? undefined : changeableOnTheWay(prefix, real, host);
      if (open)
        out.push({
          code: 'KS_MOUNT_NOT_PERMITTED',
          message: `${c.name} mounts ${m.source}, but ${open.dir} on the way to it can be changed by ${open.who}, who could swap it for a link between this check and the container's start`,
          path: at(`mounts[${i}].source`),
          flag: `--allow-mount ${real}`,
          hint: `make ${open.dir} root's and not writable by others, or allow the source itself`,
        });
    } else
      out.push({
        code: 'KS_MOUNT_NOT_PERMITTED',
        message: `${c.name} mounts host path ${m.source}${real !== source ? ` (really ${real})` : ''}, which this device does not allow (${policy.allowMounts.length ? `it allows mounts under ${policy.allowMounts.join(', ')}` : 'it allows no host mounts'})`,
        path: at(`mounts[${i}].source`),
        flag: `--allow-mount ${real}`,
      });
    if (!m.read_only && writableMount < 0) writableMount = i;
  });

  // Root in the container owns what it writes through a host mount: a setuid-root file there is host root.
  if (writableMount >= 0 && !policy.allowRoot) {
    // Both ids: the engine gives a bare uid without a passwd entry in the image gid 0 (a setgid-root file on the host).
    const ids = numericUser(spec.user);
    if (!ids || ids.gid === undefined || ids.uid === 0 || ids.gid === 0 || ids.uid > MAX_ID || ids.gid > MAX_ID)
      out.push({
        code: 'KS_ROOT_NOT_PERMITTED',
        message:
          spec.user === undefined
            ? `${c.name} has a writable host mount (mounts[${writableMount}]) and no user, so it may run as root (the image's default)`
            : ids
              ? `${c.name} runs as user "${spec.user}" (${ids.gid === undefined ? 'no group: the engine may give it gid 0' : 'root'}) with a writable host mount (mounts[${writableMount}])`
              : `${c.name} runs as user "${spec.user}", a name resolved inside the image (it may be root), with a writable host mount (mounts[${writableMount}])`,
        path: spec.user === undefined ? at(`mounts[${writableMount}].read_only`) : at('user'),
        flag: '--allow-root',
        hint: 'set user = "UID:GID" with a non-zero numeric uid, or read_only = true',
      });
  }

  const devices = expand(policy.allowDevices, host);
  (spec.devices ?? []).forEach((d, i) => {
    const path = canonicalHostPath(d) ?? d;
    const real = host.realpath(path) ?? path;
    if ([path, real].some((p) => devices.some((a) => isWithin(p, a)))) return;
    out.push({
      code: 'KS_DEVICE_NOT_PERMITTED',
      message: `${c.name} asks for host device ${d}${real !== path ? ` (${real})` : ''}, which this device does not allow`,
      path: at(`devices[${i}]`),
      flag: `--allow-device ${d}`,
    });
  });

  capabilityIssues(spec.capabilities ?? [], SAFE_CONTAINER_CAPABILITIES, at('capabilities'));
  return out;
}

/** The issue with the flag that would allow it said in its hint: what a person reads after the message. */
export function withFlagHint(i: PolicyIssue): PolicyIssue {
  return { ...i, hint: i.hint ? `allow it with ${i.flag}, or ${i.hint}` : `allow it with ${i.flag}` };
}

/** The first directory from `prefix` (inclusive) down to the parent of `source` that someone else could change. */
function changeableOnTheWay(
  prefix: string,
  source: string,
  host: PolicyHost,
): { dir: string; who: string } | undefined {
  if (!host.changeableBy || source === prefix) return undefined;
  const rest = source.slice(prefix === '/' ? 1 : prefix.length + 1).split('/');
  let dir = prefix;
  for (const seg of rest.slice(0, -1)) {
    const who = host.changeableBy(dir);
    if (who) return { dir, who };
    dir = dir === '/' ? `/${seg}` : `${dir}/${seg}`;
  }
  const who = host.changeableBy(dir);
  return who ? { dir, who } : undefined;
}

/** `"0"`, `"0:0"`, `"x:0"`: numeric ids a process user spec names when the device's passwd does not answer. */
function numericProcessUser(spec: string): { uid: number; gid: number } | undefined {
  const [u = '', g] = spec.split(':');
  const uid = /^\d+$/.test(u) ? Number(u) : u === 'root' ? 0 : undefined;
  const gid = g === undefined ? uid : /^\d+$/.test(g) ? Number(g) : g === 'root' ? 0 : undefined;
  if (uid === undefined && gid === undefined) return undefined;
  return { uid: uid ?? -1, gid: gid ?? -1 };
}

/** `host` → "the host", `container:db` → "container db", `ns:/proc/1/ns/net` → "/proc/1/ns/net". */
function describeShared(mode: string): string {
  if (mode.toLowerCase() === 'host') return 'the host';
  const colon = mode.indexOf(':');
  if (colon < 0) return mode;
  const kind = mode.slice(0, colon);
  return kind === 'container' ? `container ${mode.slice(colon + 1)}` : mode.slice(colon + 1);
}

/** Each path canonical, plus its real path where that differs (a prefix given through a link covers both). */
function expand(paths: readonly string[], host: PolicyHost): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    const c = canonicalHostPath(p);
    if (c === undefined) continue;
    out.add(c);
    const real = host.realpath(c);
    if (real !== undefined) out.add(real);
  }
  return [...out];
}

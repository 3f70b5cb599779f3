// The device policy (SPEC §5): what any recipe may have on this device. Signed recipes say what a component wants;
// the device's own configuration decides, because a careless or compromised recipe author must not own every device.
import { isAbsolute, normalize } from 'node:path';
import { LINUX_CAPABILITIES } from './capabilities.js';
import type { DevicePolicyView } from './device-policy-view.js';

/** What this device allows beyond the safe defaults; everything absent here is refused. */
export interface DevicePolicy {
  /** `privileged = true` containers, and bind mounts of the container engine's socket or the agent's state. */
  allowPrivileged: boolean;
  /** Host namespaces in any spelling: `host`, `container:…`, `ns:…` for network, pid, ipc, uts and userns. */
  allowHostNamespaces: boolean;
  /** Host path prefixes (normalized, absolute) that containers may bind-mount. */
  allowMounts: readonly string[];
  /** Capabilities granted beyond the safe default sets (canonical `CAP_…` names). */
  allowCapabilities: readonly string[];
  /** Host device paths (or directory prefixes such as `/dev/serial/`) containers may be given. */
  allowDevices: readonly string[];
  /** Process users with uid or gid 0, and containers that may run as root with a writable host mount. */
  allowRoot: boolean;
}

/** Nothing beyond the safe defaults: what a device gets without any `--allow-*`. */
export const DEFAULT_DEVICE_POLICY: DevicePolicy = Object.freeze({
  allowPrivileged: false,
  allowHostNamespaces: false,
  allowMounts: [],
  allowCapabilities: [],
  allowDevices: [],
  allowRoot: false,
});

/**
 * Capabilities a process may hold on the host without any flag: none of them reaches root. (CAP_SETUID, CAP_CHOWN,
 * CAP_DAC_OVERRIDE, CAP_FOWNER… on the host each amount to root: they are not here.)
 */
export const SAFE_PROCESS_CAPABILITIES: ReadonlySet<string> = new Set([
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_BROADCAST',
  'CAP_WAKE_ALARM',
]);

/**
 * Capabilities a container may hold without any flag: the set Docker grants every container by default, less
 * CAP_NET_RAW (spoofing on the bridge) and CAP_MKNOD. Inside the container's namespaces, with no host mount the policy
 * did not allow, none of them reaches the host.
 */
export const SAFE_CONTAINER_CAPABILITIES: ReadonlySet<string> = new Set([
  'CAP_AUDIT_WRITE',
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_NET_BIND_SERVICE',
  'CAP_SETFCAP',
  'CAP_SETGID',
  'CAP_SETPCAP',
  'CAP_SETUID',
  'CAP_SYS_CHROOT',
]);

/** `net_admin`, `NET_ADMIN`, `cap_net_admin` → `CAP_NET_ADMIN`; undefined for what is no capability. */
export function canonicalCapability(text: string): string | undefined {
  const up = text.trim().toUpperCase();
  const name = up.startsWith('CAP_') ? up : `CAP_${up}`;
  return LINUX_CAPABILITIES.has(name) ? name : undefined;
}

/** An absolute host path with `.`/`..` folded and no trailing slash (but `/`); undefined when not absolute. */
export function canonicalHostPath(text: string): string | undefined {
  if (!isAbsolute(text)) return undefined;
  const n = normalize(text);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** Is `path` the prefix `prefix` itself or inside it, by whole path segments (`/srv/a` is not inside `/srv/ab`)? */
export function isWithin(path: string, prefix: string): boolean {
  if (prefix === '/') return true;
  return path === prefix || path.startsWith(prefix + '/');
}

export function devicePolicyView(p: DevicePolicy): DevicePolicyView {
  return {
    allowPrivileged: p.allowPrivileged,
    allowHostNamespaces: p.allowHostNamespaces,
    allowMounts: [...p.allowMounts],
    allowCapabilities: [...p.allowCapabilities],
    allowDevices: [...p.allowDevices],
    allowRoot: p.allowRoot,
    safeCapabilities: {
      process: [...SAFE_PROCESS_CAPABILITIES].sort(),
      container: [...SAFE_CONTAINER_CAPABILITIES].sort(),
    },
  };
}

/** The policy back from its view (what apply-dry reads from the agent); undefined when `v` is not one. */
export function devicePolicyFromView(v: unknown): DevicePolicy | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const strings = (x: unknown) =>
    Array.isArray(x) && x.every((s) => typeof s === 'string') ? (x as string[]) : undefined;
  const mounts = strings(o.allowMounts);
  const caps = strings(o.allowCapabilities);
  const devices = strings(o.allowDevices);
  if (
    typeof o.allowPrivileged !== 'boolean' ||
    typeof o.allowHostNamespaces !== 'boolean' ||
    typeof o.allowRoot !== 'boolean' ||
    !mounts ||
    !caps ||
    !devices
  )
    return undefined;
  return {
    allowPrivileged: o.allowPrivileged,
    allowHostNamespaces: o.allowHostNamespaces,
    allowRoot: o.allowRoot,
    allowMounts: mounts,
    allowCapabilities: caps,
    allowDevices: devices,
  };
}

/** One line per grant, for a terminal: `privileged containers`, `mounts under /srv`…; [] for the defaults. */
export function describeDevicePolicy(p: DevicePolicy): string[] {
  const out: string[] = [];
  if (p.allowPrivileged) out.push('privileged containers and the engine socket (--allow-privileged)');
  if (p.allowHostNamespaces) out.push('host namespaces (--allow-host-namespaces)');
  if (p.allowRoot) out.push('root users (--allow-root)');
  for (const m of p.allowMounts) out.push(`bind mounts under ${m} (--allow-mount)`);
  for (const c of p.allowCapabilities) out.push(`capability ${c} (--allow-capability)`);
  for (const d of p.allowDevices) out.push(`device ${d} (--allow-device)`);
  return out;
}

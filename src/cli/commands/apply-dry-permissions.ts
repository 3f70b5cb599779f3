// What a change asks of a device beyond the safe defaults (SPEC §5), said in the dry run before it is merged: a pull
// request that adds `user = "root"` is refused by every device without --allow-root, and the reviewer should see
// that, not the devices. The check is the agent's own (core/policy-check.ts), never a second one; `--device-policy`
// with the agent's `--allow-*` flags runs it against such a device's policy and refuses as that device would.
import { DEFAULT_DEVICE_POLICY, type DevicePolicy } from '../../core/device-policy.js';
import type { DesiredComponent } from '../../core/desired-state.js';
import { checkDevicePolicy, withFlagHint, type PolicyHost } from '../../core/policy-check.js';
import { UsageError } from '../io.js';
import { devicePolicyFrom, POLICY_OPTIONS, POLICY_USAGE, type PolicyValues } from '../policy-args.js';
import type { PolicyProblem } from '../render/policy-refusal.js';

export const PERMISSION_OPTIONS = {
  'device-policy': { type: 'boolean', default: false },
  ...POLICY_OPTIONS,
} as const;

export const PERMISSION_USAGE = `[--device-policy ${POLICY_USAGE}]`;

/** One permission one component needs: `needs --allow-root for api`. Stable JSON keys. */
export interface Permission {
  component: string;
  /** The agent flag that would allow it: `--allow-root`, `--allow-mount /srv/data`. */
  needs: string;
  /** The recipe and the TOML path that ask for it, and the code a device refuses it with. */
  file: string;
  path: string;
  code: string;
  /** The fleet target whose plan holds the component (`apply-dry --fleet` only). */
  target?: string;
}

/**
 * `--device-policy` and the `--allow-*` flags as the policy of the device to refuse as; undefined without
 * `--device-policy`. An `--allow-*` without it is a usage error: it would silently check nothing.
 */
export function devicePolicyArg(values: PolicyValues & { 'device-policy'?: boolean }): DevicePolicy | undefined {
  if (!values['device-policy']) {
    const given = (Object.keys(POLICY_OPTIONS) as (keyof PolicyValues)[]).find((k) => {
      const v = values[k];
      return Array.isArray(v) ? v.length > 0 : v === true;
    });
    if (given)
      throw new UsageError(
        `--${given} describes a device: give --device-policy with it to check the change against that device's policy`,
      );
    return undefined;
  }
  return devicePolicyFrom(values);
}

/** Every permission beyond the safe defaults the components need, one per component and flag, in component order. */
export function permissionsOf(
  components: readonly DesiredComponent[],
  host: PolicyHost,
  target?: string,
): Permission[] {
  const out: Permission[] = [];
  for (const c of components) {
    const seen = new Set<string>();
    for (const i of checkDevicePolicy(c, DEFAULT_DEVICE_POLICY, host)) {
      if (seen.has(i.flag)) continue;
      seen.add(i.flag);
      out.push({
        component: c.name,
        needs: i.flag,
        file: c.recipePath,
        path: i.path,
        code: i.code,
        ...(target !== undefined && { target }),
      });
    }
  }
  return out;
}

/** What a device with `policy` refuses of the components, as its agent says it (the flag in the hint). */
export function refusedByPolicy(
  components: readonly DesiredComponent[],
  policy: DevicePolicy,
  host: PolicyHost,
): PolicyProblem[] {
  return components.flatMap((c) =>
    checkDevicePolicy(c, policy, host).map((i) => ({ component: c.name, file: c.recipePath, ...withFlagHint(i) })),
  );
}

/**
 * The host facts read once for a whole dry run: the device check reads /etc/passwd at every user it resolves (an
 * agent must see a user added since its last revision), which a dry run of a thousand components need not repeat.
 */
export function memoizedHost(host: PolicyHost): PolicyHost {
  const users = new Map<string, ReturnType<PolicyHost['resolveUser']>>();
  const paths = new Map<string, string | undefined>();
  let groups: readonly number[] | undefined;
  return {
    guarded: host.guarded,
    realpath: (path) => {
      if (!paths.has(path)) paths.set(path, host.realpath(path));
      return paths.get(path);
    },
    resolveUser: (spec) => {
      if (!users.has(spec)) users.set(spec, host.resolveUser(spec));
      return users.get(spec);
    },
    get rootGroups() {
      return (groups ??= host.rootGroups ?? []);
    },
    ...(host.changeableBy && { changeableBy: host.changeableBy.bind(host) }),
  };
}

/** `a device with --allow-root --allow-mount /srv` / `a device with the safe defaults only`. */
export function describePolicyFlags(policy: DevicePolicy): string {
  const flags = [
    ...(policy.allowPrivileged ? ['--allow-privileged'] : []),
    ...(policy.allowHostNamespaces ? ['--allow-host-namespaces'] : []),
    ...(policy.allowRoot ? ['--allow-root'] : []),
    ...policy.allowMounts.map((m) => `--allow-mount ${m}`),
    ...policy.allowCapabilities.map((c) => `--allow-capability ${c}`),
    ...policy.allowDevices.map((d) => `--allow-device ${d}`),
  ];
  return flags.length ? `a device with ${flags.join(' ')}` : 'a device with the safe defaults only';
}

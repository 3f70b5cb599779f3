// `--allow-privileged`, `--allow-host-namespaces`, `--allow-mount`, `--allow-capability`, `--allow-device`,
// `--allow-root`: the device policy (SPEC §5) as the agent's flags, checked like any other input.
import { canonicalCapability, canonicalHostPath, type DevicePolicy } from '../core/device-policy.js';
import { UsageError } from './io.js';

export const POLICY_OPTIONS = {
  'allow-privileged': { type: 'boolean', default: false },
  'allow-host-namespaces': { type: 'boolean', default: false },
  'allow-mount': { type: 'string', multiple: true },
  'allow-capability': { type: 'string', multiple: true },
  'allow-device': { type: 'string', multiple: true },
  'allow-root': { type: 'boolean', default: false },
} as const;

export const POLICY_USAGE =
  '[--allow-privileged] [--allow-host-namespaces] [--allow-root] [--allow-mount PATH…] [--allow-capability CAP…] [--allow-device /dev/…]';

export interface PolicyValues {
  'allow-privileged'?: boolean;
  'allow-host-namespaces'?: boolean;
  'allow-mount'?: string[];
  'allow-capability'?: string[];
  'allow-device'?: string[];
  'allow-root'?: boolean;
}

/** The flags as a policy; a relative path, `..` games or an unknown capability is a usage error (exit 2). */
export function devicePolicyFrom(values: PolicyValues): DevicePolicy {
  const paths = (flag: string, list: string[] | undefined, under?: string) => [
    ...new Set(
      (list ?? []).map((p) => {
        const c = canonicalHostPath(p);
        if (c === undefined) throw new UsageError(`--${flag} takes an absolute host path, not "${p}"`);
        if (under !== undefined && !c.startsWith(under))
          throw new UsageError(`--${flag} takes a path under ${under}, not "${p}"`);
        return c;
      }),
    ),
  ];
  const capabilities = (values['allow-capability'] ?? []).map((text) => {
    const c = canonicalCapability(text);
    if (c === undefined)
      throw new UsageError(`--allow-capability: "${text}" is not a Linux capability (e.g. CAP_NET_ADMIN)`);
    return c;
  });
  return {
    allowPrivileged: values['allow-privileged'] ?? false,
    allowHostNamespaces: values['allow-host-namespaces'] ?? false,
    allowMounts: paths('allow-mount', values['allow-mount']),
    allowCapabilities: [...new Set(capabilities)],
    allowDevices: paths('allow-device', values['allow-device'], '/dev/'),
    allowRoot: values['allow-root'] ?? false,
  };
}

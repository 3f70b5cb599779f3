// What a container component may ask for on this device, checked before anything is pulled, created or stopped.
import { isAbsolute } from 'node:path';
import { DEFAULT_DEVICE_POLICY, type DevicePolicy } from '../core/device-policy.js';
import type { DesiredComponent } from '../core/desired-state.js';
import { checkDevicePolicy, withFlagHint, type PolicyCode, type PolicyHost } from '../core/policy-check.js';
import type { ContainerCode } from './container-error.js';

/** One reason a container component cannot run here, shaped like a diagnostic: code, message, TOML path. */
export interface ContainerIssue {
  code: ContainerCode | PolicyCode;
  message: string;
  /** `lifecycle.run.container.mounts[0].source` */
  path: string;
  /** The flag that would allow it, for a policy refusal (`--allow-mount /srv/data`). */
  flag?: string;
  hint?: string;
}

export interface ContainerCheckOptions {
  /** What this device allows; default: nothing beyond the safe defaults. */
  policy?: DevicePolicy;
  /** Does this host path exist? (`existsSync` in production; injected so the check stays pure.) */
  exists: (path: string) => boolean;
  /** Real paths, users and the guarded paths (see PolicyHost); default: the literal paths, nothing guarded. */
  host?: PolicyHost;
}

const LITERAL_HOST: PolicyHost = { realpath: () => undefined, resolveUser: () => undefined, guarded: [] };

/**
 * Every reason `c` cannot run as a container on this device, in field order; [] when it can: the device policy
 * (checkDevicePolicy), then mounts that are not absolute or whose source is missing. Pure but for the host facts: the
 * agent calls it while planning, so a refused recipe stops nothing, and the runtime calls it again before it creates
 * anything.
 */
export function checkContainerComponent(c: DesiredComponent, opts: ContainerCheckOptions): ContainerIssue[] {
  const run = c.recipe.lifecycle.run;
  const spec = run.container;
  if (run.type !== 'container' || !spec)
    return [
      {
        code: 'KS_WRONG_RUNTIME',
        message: `${c.name} runs a ${run.type}, not a container`,
        path: 'lifecycle.run.type',
      },
    ];
  const base = c.runPath ?? 'lifecycle.run';
  const at = (field: string) => `${base}.container.${field}`;
  const out: ContainerIssue[] = checkDevicePolicy(
    c,
    opts.policy ?? DEFAULT_DEVICE_POLICY,
    opts.host ?? LITERAL_HOST,
  ).map(withFlagHint);
  spec.mounts.forEach((m, i) => {
    if (!isAbsolute(m.source))
      out.push({
        code: 'KS_MOUNT_SOURCE_INVALID',
        message: `mount source "${m.source}" of ${c.name} is not an absolute path`,
        path: at(`mounts[${i}].source`),
      });
    else if (!opts.exists(m.source))
      out.push({
        code: 'KS_MOUNT_SOURCE_MISSING',
        message: `mount source ${m.source} of ${c.name} does not exist on this device`,
        path: at(`mounts[${i}].source`),
        hint: 'create it first (a missing source is refused rather than mounted as an empty directory)',
      });
    if (!isAbsolute(m.target))
      out.push({
        code: 'KS_MOUNT_SOURCE_INVALID',
        message: `mount target "${m.target}" of ${c.name} is not an absolute path`,
        path: at(`mounts[${i}].target`),
      });
  });
  return out;
}

// What a container component may ask for on this device, checked before anything is pulled, created or stopped.
import { isAbsolute } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import type { ContainerCode } from './container-error.js';

/** One reason a container component cannot run here, shaped like a diagnostic: code, message, TOML path. */
export interface ContainerIssue {
  code: ContainerCode;
  message: string;
  /** `lifecycle.run.container.mounts[0].source` */
  path: string;
  hint?: string;
}

export interface ContainerPermissions {
  /** The device configuration allows `privileged = true`. */
  allowPrivileged?: boolean;
  /** The device configuration allows the host's namespaces (`network_mode = "host"`). */
  allowHostNamespaces?: boolean;
}

export interface ContainerCheckOptions extends ContainerPermissions {
  /** Does this host path exist? (`existsSync` in production; injected so the check stays pure.) */
  exists: (path: string) => boolean;
}

/** Network modes that share a host namespace. */
const HOST_NETWORK = new Set(['host']);

/**
 * Every reason `c` cannot run as a container on this device, in field order; [] when it can. Pure but for
 * `exists`: the agent calls it while planning, so a refused recipe stops nothing, and the runtime calls it
 * again before it creates anything.
 */
export function checkContainerComponent(c: DesiredComponent, opts: ContainerCheckOptions): ContainerIssue[] {
  const run = c.recipe.lifecycle.run;
  const spec = run.container;
  if (run.type !== 'container' || !spec)
    return [{ code: 'KS_WRONG_RUNTIME', message: `${c.name} runs a ${run.type}, not a container`, path: 'lifecycle.run.type' }];
  const out: ContainerIssue[] = [];
  const at = (field: string) => `lifecycle.run.container.${field}`;
  if (HOST_NETWORK.has(spec.network_mode) && !opts.allowHostNamespaces)
    out.push({
      code: 'KS_CONTAINER_NOT_PERMITTED',
      message: `${c.name} asks for network_mode = "${spec.network_mode}" (the host's network namespace), which this device does not allow`,
      path: at('network_mode'),
      hint: 'use "bridge" with ports, or allow host namespaces in the device configuration',
    });
  if (spec.privileged && !opts.allowPrivileged)
    out.push({
      code: 'KS_CONTAINER_NOT_PERMITTED',
      message: `${c.name} asks for privileged = true, which this device does not allow`,
      path: at('privileged'),
      hint: 'grant only the capabilities it needs with capabilities = [...], or allow privileged containers in the device configuration',
    });
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

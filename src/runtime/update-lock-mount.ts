// A container's update lock (SPEC §19): the lock's directory in the component's work directory on the host, made for
// the container to create its lock file in (any user of the container, so world-writable with the sticky bit; the work
// directory around it is the agent's and closed to other users), mounted at the same path from the container's root.
import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DesiredComponent } from '../core/desired-state.js';
import { containerLockDir } from '../core/update-lock-rules.js';
import { RuntimeError } from './runtime-error.js';

export function updateLockMount(c: DesiredComponent, workDir: string): { source: string; target: string } | undefined {
  const lock = c.recipe.lifecycle.update?.lock;
  const target = lock === undefined ? undefined : containerLockDir(lock);
  if (target === undefined) return undefined;
  const source = join(workDir, target);
  mkdirSync(source, { recursive: true, mode: 0o755 });
  // What a container made of it before is the container's own business; the directory itself must be one.
  if (!lstatSync(source).isDirectory())
    throw new RuntimeError(
      'KS_START_FAILED',
      `${source}, the directory of ${c.name}'s update lock, is not a directory`,
      { component: c.name },
    );
  chmodSync(source, 0o1777);
  return { source, target };
}

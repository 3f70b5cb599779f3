// The test image: a rootfs of the host's static busybox, `docker import`ed once per machine (no registry is reachable).
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureRootfsImage } from './rootfs-image.js';

export const BUSYBOX_IMAGE = 'keystone-test/busybox:1';
export const BUSYBOX_APPLETS = ['sh', 'httpd', 'sleep', 'nc', 'id', 'cat', 'echo', 'wget', 'true', 'false', 'ls', 'grep', 'touch', 'test'] as const;

/** Builds `keystone-test/busybox:1` unless the engine has it already (see ensureRootfsImage). */
export function ensureBusyboxImage(timeoutMs = 60_000): Promise<string> {
  return ensureRootfsImage(
    { tag: BUSYBOX_IMAGE, applets: BUSYBOX_APPLETS, dirs: ['www'], fill: (root) => writeFile(join(root, 'www', 'index.html'), 'keystone test page\n') },
    timeoutMs,
  );
}

/** Ids of every container (running or not) carrying the label `key=value`. */
export function containersLabelled(key: string, value: string): string[] {
  const r = spawnSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `label=${key}=${value}`], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`docker ps --filter label=${key}=${value} failed: ${r.stderr || r.error?.message}`);
  return r.stdout.split('\n').filter(Boolean);
}

/** Force-removes every container carrying the label `key=value` (a test's clean-up, e.g. by `io.keystone.owner`). */
export function removeContainersLabelled(key: string, value: string): void {
  const ids = containersLabelled(key, value);
  if (ids.length === 0) return;
  const r = spawnSync('docker', ['rm', '-f', '-v', ...ids], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 && containersLabelled(key, value).length > 0) throw new Error(`docker rm -f of ${ids.join(' ')} failed: ${r.stderr || r.error?.message}`);
}
